package webappconf

import (
	"io"
	"strings"
	"testing"
)

// TestLeaseCheck checks that the WEBAPP refuses to start with a ghost
// timeout that would end a cut-off minion's job before the minion has
// killed it, naming the flags to change.
func TestLeaseCheck(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "defaults", args: nil},
		{name: "lease of half the ghost timeout", args: []string{"--ghost-timeout", "30s", "--kill-grace", "5s"}},
		{name: "derived lease too long", args: []string{"--ghost-timeout", "20s"}, wantErr: "--ghost-timeout 20s must be longer than --lease 10s plus --kill-grace 10s"},
		{name: "lease too long", args: []string{"--ghost-timeout", "10m", "--lease", "9m55s"}, wantErr: "--ghost-timeout 10m0s must be longer than --lease 9m55s plus --kill-grace 10s"},
		{name: "grace too long", args: []string{"--ghost-timeout", "10m", "--kill-grace", "6m"}, wantErr: "--kill-grace 6m0s"},
		{name: "explicit lease", args: []string{"--ghost-timeout", "4s", "--lease", "1s", "--kill-grace", "1s"}},
		{name: "lease under a second", args: []string{"--ghost-timeout", "1s"}, wantErr: "--lease 500ms: want at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.args, io.Discard)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Parse(%q): %v", tt.args, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Parse(%q): got %v, want an error with %q", tt.args, err, tt.wantErr)
			}
		})
	}
}
