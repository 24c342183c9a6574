package minionname

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{name: "systemd instance", in: "build01-3", ok: true},
		{name: "host name with dots", in: "build01.example.org-12", ok: true},
		{name: "underscore and capitals", in: "Mirror_Box-1", ok: true},
		{name: "longest", in: strings.Repeat("a", 64), ok: true},
		{name: "empty"},
		{name: "too long", in: strings.Repeat("a", 65)},
		{name: "NUL", in: "m1\x00"},
		{name: "newline", in: "m1\nINFO forged log line"},
		{name: "tab", in: "m\t1"},
		{name: "DEL", in: "m\x7f"},
		{name: "space", in: "m 1"},
		{name: "slash", in: "a/b"},
		{name: "non-ASCII", in: "mïnion"},
		{name: "dot", in: "."},
		{name: "dot-dot", in: ".."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.in)
			if (err == nil) != tc.ok {
				t.Errorf("Check(%q) = %v; want ok %v", tc.in, err, tc.ok)
			}
		})
	}
}
