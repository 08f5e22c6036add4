package cqlcluster

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// A killed process that nobody has reaped yet is a zombie: kill(pid, 0)
// still finds it, running must not.
func TestRunningTreatsAZombieAsGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("zombies are told apart through /proc, which is Linux's")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Wait() })
	if !running(pid) {
		t.Fatalf("running(%d) = false for a sleeping child", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("running(%d) still true 10 s after SIGKILL", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Not yet reaped (cmd.Wait runs at cleanup), so the process still
	// exists: what running saw was the zombie.
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("kill(%d, 0) = %v: the zombie was reaped early, the test saw nothing", pid, err)
	}
	if running(-1) {
		t.Fatal("running(-1) = true")
	}
}
