package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsRequirements checks docs/requirements.md against the tree: every
// requirement id of the original specification has a section there, every
// section names at least one test, every file it names exists, and the
// testdata/req_* script named by an id is listed under that id.
func TestDocsRequirements(t *testing.T) {
	b, err := os.ReadFile("docs/requirements.md")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 1; i <= 16; i++ {
		ids = append(ids, fmt.Sprintf("FR-%03d", i))
	}
	for i := 1; i <= 6; i++ {
		ids = append(ids, fmt.Sprintf("SC-%03d", i))
	}

	// sections maps each "### <id>" heading to the text up to the next
	// heading.
	sections := map[string]string{}
	heading := regexp.MustCompile(`(?m)^#{1,6} `)
	idHeading := regexp.MustCompile(`^### ((?:FR|SC)-\d{3})\s*\n`)
	text := string(b)
	starts := heading.FindAllStringIndex(text, -1)
	for i, s := range starts {
		end := len(text)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		sec := text[s[0]:end]
		if m := idHeading.FindStringSubmatch(sec); m != nil {
			if _, dup := sections[m[1]]; dup {
				t.Errorf("docs/requirements.md: %s has two sections", m[1])
			}
			sections[m[1]] = sec
		}
	}

	file := regexp.MustCompile("`([A-Za-z0-9_./-]+\\.(?:txtar|go|sh))`")
	for _, id := range ids {
		sec, ok := sections[id]
		if !ok {
			t.Errorf("docs/requirements.md: no section \"### %s\"", id)
			continue
		}
		named := map[string]bool{}
		for _, m := range file.FindAllStringSubmatch(sec, -1) {
			named[m[1]] = true
		}
		if len(named) == 0 {
			t.Errorf("docs/requirements.md: %s names no test file", id)
		}
		// The scripts named by this id must all be listed under it.
		pattern := "testdata/req_" + strings.ToLower(strings.ReplaceAll(id, "-", "")) + "_*.txtar"
		scripts, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scripts {
			if !named[filepath.ToSlash(s)] {
				t.Errorf("docs/requirements.md: %s does not list %s", id, s)
			}
		}
	}

	// Every file named anywhere on the page exists.
	for _, m := range file.FindAllStringSubmatch(text, -1) {
		if _, err := os.Stat(filepath.FromSlash(m[1])); err != nil {
			t.Errorf("docs/requirements.md names %s: %v", m[1], err)
		}
	}
	for id := range sections {
		if !slices.Contains(ids, id) {
			t.Errorf("docs/requirements.md: %s is not a requirement of the specification", id)
		}
	}
}
