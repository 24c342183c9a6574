package routes

import (
	"strings"
	"testing"
)

// TestRedactorLines hides a password that holds white space, however the
// output streamed through the redactor is split.
func TestRedactorLines(t *testing.T) {
	const out = "fetching https://u:Pa ss\tw0rd#x@host/x\nfatal: unable to access 'https://u:Pa ss\tw0rd#x@host/x/': 403\n"
	for n := 1; n < len(out); n++ {
		var b strings.Builder
		r := &redactor{w: &b}
		for s := out; s != ""; {
			m := min(n, len(s))
			if _, err := r.Write([]byte(s[:m])); err != nil {
				t.Fatal(err)
			}
			s = s[m:]
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); strings.Contains(got, "w0rd") || strings.Count(got, "https://***@host/x") != 2 {
			t.Fatalf("written %d bytes at a time: %q", n, got)
		}
	}
}
