package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// walkthroughStart is the first block of the walkthrough in
// docs/migration.md: it builds ebb and starts a server, which the test
// does its own way (a fresh binary, a free port).
const walkthroughStart = `make build
bin/ebb serve --data ./ebb-data 2>ebb.log &
until bin/ebb health >/dev/null 2>&1; do sleep 0.2; done
`

// TestDocsMigrationWalkthrough runs the section "Try it on the embedded
// backend" of docs/migration.md against a real `ebb serve`: each sh block
// after the first with bash, in order, in one shell state, in a directory
// where bin/ebb is the ebb under test; each output against the text block
// that follows its block.
func TestDocsMigrationWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is needed to run the documented commands: %v", err)
	}
	blocks := sectionBlocks(t, filepath.Join("..", "..", "docs", "migration.md"), "Try it on the embedded backend (about five minutes)")
	if len(blocks) < 10 || blocks[0].text != walkthroughStart {
		t.Fatalf("the walkthrough no longer starts with\n%s(%d blocks): update this test", walkthroughStart, len(blocks))
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ebbBinary(t), filepath.Join(dir, "bin", "ebb")); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, "--data", filepath.Join(dir, "ebb-data"), "--addr", "127.0.0.1:0")

	const marker = "@@ ebb docs block end @@"
	var script strings.Builder
	script.WriteString("set -e\n")
	var shell []int
	for i, b := range blocks[1:] {
		if b.lang != "sh" {
			continue
		}
		shell = append(shell, i+1)
		fmt.Fprintf(&script, "%s\nprintf '\\n%%s\\n' '%s'\n", b.text, marker)
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EBB_SERVER="+p.url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the documented commands failed: %v\n%s", err, out)
	}
	outputs := strings.Split(string(out), marker)
	if len(outputs) != len(shell)+1 {
		t.Fatalf("%d outputs for %d blocks:\n%s", len(outputs)-1, len(shell), out)
	}
	checked := 0
	for n, i := range shell {
		if i+1 >= len(blocks) || blocks[i+1].lang != "text" {
			continue
		}
		if err := matchOutput(blocks[i+1].text, outputs[n]); err != nil {
			t.Errorf("block %d:\n%s\nprinted:\n%s\ndocs show:\n%s\n%v", i, blocks[i].text, strings.TrimSpace(outputs[n]), blocks[i+1].text, err)
		}
		checked++
	}
	if checked < 8 {
		t.Fatalf("only %d outputs checked", checked)
	}
}

var (
	docTimeInText = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	spaces        = regexp.MustCompile(`[ \t]+`)
)

// matchOutput checks an output against the one the docs show, line by
// line, runs of blanks taken as one: a time shown stands for any time, and
// "…" for anything.
func matchOutput(want, got string) error {
	norm := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			out = append(out, strings.TrimSpace(spaces.ReplaceAllString(l, " ")))
		}
		return out
	}
	w, g := norm(want), norm(got)
	if len(w) != len(g) {
		return fmt.Errorf("%d lines, the docs show %d", len(g), len(w))
	}
	for i := range w {
		line := docTimeInText.ReplaceAllString(w[i], "\x00t")
		line = strings.ReplaceAll(line, "…", "\x00a")
		pattern := regexp.QuoteMeta(line)
		pattern = strings.ReplaceAll(pattern, "\x00t", docTimeInText.String())
		pattern = strings.ReplaceAll(pattern, "\x00a", ".*")
		if !regexp.MustCompile("^" + pattern + "$").MatchString(g[i]) {
			return fmt.Errorf("line %d is %q, the docs show %q", i+1, g[i], w[i])
		}
	}
	return nil
}
