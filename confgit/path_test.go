package confgit

import (
	"errors"
	"strings"
	"testing"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		wantErr string // empty: the path is valid
	}{
		{name: "one segment", path: "foo"},
		{name: "nested", path: "delta/gnome/glib"},
		{name: "dots inside names", path: "a/.hidden/b..c/...", wantErr: ""},
		{name: "unicode", path: "delta/gräbe"},
		{name: "empty", path: "", wantErr: "empty"},
		{name: "absolute", path: "/etc/passwd", wantErr: "absolute"},
		{name: "root", path: "/", wantErr: "absolute"},
		{name: "dotdot", path: "..", wantErr: `".." segment`},
		{name: "dotdot inside", path: "a/../b", wantErr: `".." segment`},
		{name: "dotdot at end", path: "a/..", wantErr: `".." segment`},
		{name: "dot at start", path: "./a", wantErr: `"." segment`},
		{name: "dot at end", path: "a/.", wantErr: `"." segment`},
		{name: "double slash", path: "a//b", wantErr: "empty segment"},
		{name: "trailing slash", path: "a/", wantErr: "empty segment"},
		{name: "tab", path: "a\tb", wantErr: "control character"},
		{name: "newline", path: "a\nb", wantErr: "control character"},
		{name: "NUL", path: "a\x00b", wantErr: "control character"},
		{name: "escape", path: "a\x1b[31mb", wantErr: "control character"},
		{name: "DEL", path: "a\x7fb", wantErr: "control character"},
		{name: "C1 control", path: "a\u0085b", wantErr: "control character"},
		{name: "backslash", path: `a\b`, wantErr: "backslash"},
		{name: "backslash dotdot", path: `a\..\b`, wantErr: "backslash"},
		{name: "invalid UTF-8", path: "a\xffb", wantErr: "UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidatePath(tc.path)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidatePath(%q) = %v, want nil", tc.path, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidatePath(%q) = nil, want an error containing %q", tc.path, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ValidatePath(%q) = %q, want it to contain %q", tc.path, err, tc.wantErr)
			}
			if !errors.Is(err, ErrBadPath) {
				t.Errorf("errors.Is(%v, ErrBadPath) = false, want true", err)
			}
		})
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		path    string
		want    bool
	}{
		{name: "star at root", pattern: "*.lorry", path: "a.lorry", want: true},
		{name: "star does not cross slash", pattern: "*.lorry", path: "d/a.lorry", want: false},
		{name: "dir star", pattern: "d/*.lorry", path: "d/a.lorry", want: true},
		{name: "dir star wrong dir", pattern: "d/*.lorry", path: "e/a.lorry", want: false},
		{name: "dir star too deep", pattern: "d/*.lorry", path: "d/e/a.lorry", want: false},
		{name: "star dir", pattern: "*/*.lorry", path: "d/a.lorry", want: true},
		{name: "question mark", pattern: "d/?.lorry", path: "d/a.lorry", want: true},
		{name: "class", pattern: "d/[ab].lorry", path: "d/b.lorry", want: true},
		{name: "negated class", pattern: "d/[^ab].lorry", path: "d/b.lorry", want: false},
		{name: "star matches dot files", pattern: "*.lorry", path: ".x.lorry", want: true},
		{name: "doublestar zero dirs", pattern: "**/*.lorry", path: "a.lorry", want: true},
		{name: "doublestar one dir", pattern: "**/*.lorry", path: "d/a.lorry", want: true},
		{name: "doublestar many dirs", pattern: "**/*.lorry", path: "d/e/f/a.lorry", want: true},
		{name: "doublestar in middle", pattern: "d/**/a.lorry", path: "d/x/y/a.lorry", want: true},
		{name: "doublestar in middle zero", pattern: "d/**/a.lorry", path: "d/a.lorry", want: true},
		{name: "doublestar wrong root", pattern: "d/**/a.lorry", path: "e/x/a.lorry", want: false},
		{name: "trailing doublestar", pattern: "d/**", path: "d/x/y", want: true},
		{name: "repeated doublestar", pattern: "**/**/**/*.lorry", path: "a/b/c.lorry", want: true},
		{name: "leading dot slash", pattern: "./d/*.lorry", path: "d/a.lorry", want: true},
		{name: "extension mismatch", pattern: "**/*.lorry", path: "d/a.lorry.orig", want: false},
		{name: "literal", pattern: "d/a.lorry", path: "d/a.lorry", want: true},
		{name: "malformed matches nothing", pattern: "d/[", path: "d/[", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchGlob(tc.pattern, tc.path); got != tc.want {
				t.Errorf("MatchGlob(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
			}
		})
	}
}

func TestValidateGlob(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		wantErr string
	}{
		{name: "simple", pattern: "*.lorry"},
		{name: "doublestar", pattern: "**/*.lorry"},
		{name: "empty", pattern: "", wantErr: "empty"},
		{name: "absolute", pattern: "/x/*.lorry", wantErr: "absolute"},
		{name: "empty segment", pattern: "x//*.lorry", wantErr: "empty segment"},
		{name: "bad class", pattern: "x/[a-", wantErr: "syntax error"},
		{name: "trailing escape", pattern: `x\`, wantErr: "syntax error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateGlob(tc.pattern)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateGlob(%q) = %v, want nil", tc.pattern, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ValidateGlob(%q) = %v, want an error containing %q", tc.pattern, err, tc.wantErr)
			}
		})
	}
}
