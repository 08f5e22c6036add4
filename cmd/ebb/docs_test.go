package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docBlock is one fenced block of docs/api.md: its language and text.
type docBlock struct{ lang, text string }

// sectionBlocks returns the fenced blocks of the section of a Markdown
// file headed "## title", in order.
func sectionBlocks(t *testing.T, file, title string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("%s has no section %q", file, title)
	}
	doc = doc[start+1:]
	if end := strings.Index(doc[3:], "\n## "); end >= 0 {
		doc = doc[:end+3]
	}
	var out []docBlock
	for {
		i := strings.Index(doc, "```")
		if i < 0 {
			return out
		}
		doc = doc[i+3:]
		nl := strings.IndexByte(doc, '\n')
		lang := doc[:nl]
		doc = doc[nl+1:]
		end := strings.Index(doc, "```")
		if end < 0 {
			t.Fatalf("%s: an unclosed block in %q", file, title)
		}
		out = append(out, docBlock{lang: lang, text: doc[:end]})
		doc = doc[end+3:]
	}
}

// TestDocsFirstSession runs the section "A first session" of docs/api.md
// against a real `ebb serve`: each sh block with bash, in order, in one
// shell state, and each answer against the json block that follows it.
func TestDocsFirstSession(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is needed to run the documented commands: %v", err)
	}
	p := startServe(t, "--data", t.TempDir(), "--addr", "127.0.0.1:0")
	blocks := sectionBlocks(t, filepath.Join("..", "..", "docs", "api.md"), "A first session")
	if len(blocks) < 10 {
		t.Fatalf("only %d blocks in the section", len(blocks))
	}
	// Each block runs after the ones before it, so that variables set by
	// the first hold; a marker separates the blocks' outputs.
	const marker = "@@ ebb docs block end @@"
	var script strings.Builder
	script.WriteString("set -e\n")
	var shell []int
	for i, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		shell = append(shell, i)
		fmt.Fprintf(&script, "%s\nprintf '\\n%%s\\n' '%s'\n", b.text, marker)
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Env = append(os.Environ(), "EBB="+p.url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the documented commands failed: %v\n%s", err, out)
	}
	answers := strings.Split(string(out), marker)
	if len(answers) != len(shell)+1 {
		t.Fatalf("%d answers for %d blocks:\n%s", len(answers)-1, len(shell), out)
	}
	checked := 0
	for n, i := range shell {
		got := strings.TrimSpace(answers[n])
		if i+1 >= len(blocks) || blocks[i+1].lang != "json" {
			if got != "" {
				t.Errorf("block %d printed %q but the docs show no answer", i, got)
			}
			continue
		}
		var want, have any
		if err := json.Unmarshal([]byte(blocks[i+1].text), &want); err != nil {
			t.Fatalf("the documented answer after block %d is not JSON: %v\n%s", i, err, blocks[i+1].text)
		}
		if err := json.Unmarshal([]byte(got), &have); err != nil {
			t.Fatalf("block %d answered %q, not JSON: %v\n%s", i, got, err, blocks[i].text)
		}
		if err := matchDoc(want, have, "$"); err != nil {
			t.Errorf("block %d:\n%s\nanswered %s\ndocs show %s\n%v", i, blocks[i].text, got, strings.TrimSpace(blocks[i+1].text), err)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d answers checked", checked)
	}
}

var (
	docTime     = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)
	docDuration = regexp.MustCompile(`^(\d+h)?(\d+m)?(\d+(\.\d+)?s)?$`)
)

// matchDoc checks an answer against the one the docs show: every field
// the docs show is there with the value shown, except times and durations
// left, which vary from run to run and need only have the same form.
// Fields the docs leave out may be present.
func matchDoc(want, have any, path string) error {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %v is not an object", path, have)
		}
		for k, v := range w {
			hv, ok := h[k]
			if !ok {
				return fmt.Errorf("%s.%s is missing", path, k)
			}
			if err := matchDoc(v, hv, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return fmt.Errorf("%s: %v, want %d elements", path, have, len(w))
		}
		for i := range w {
			if err := matchDoc(w[i], h[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case string:
		h, ok := have.(string)
		switch {
		case !ok:
			return fmt.Errorf("%s: %v, want a string", path, have)
		case docTime.MatchString(w):
			if _, err := time.Parse(time.RFC3339Nano, h); err != nil {
				return fmt.Errorf("%s: %q, want a time", path, h)
			}
			return nil
		case strings.HasSuffix(path, "remaining") && docDuration.MatchString(w):
			if !docDuration.MatchString(h) {
				return fmt.Errorf("%s: %q, want a duration", path, h)
			}
			return nil
		}
		if h != w {
			return fmt.Errorf("%s: %q, want %q", path, h, w)
		}
		return nil
	default:
		if !reflect.DeepEqual(want, have) {
			return fmt.Errorf("%s: %v, want %v", path, have, want)
		}
		return nil
	}
}
