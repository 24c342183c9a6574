package confgit

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrBadPath is matched (with errors.Is) by every error ValidatePath
// returns, so callers can answer "bad input" without parsing messages.
var ErrBadPath = errors.New("bad lorry path")

type pathError string

func (e pathError) Error() string        { return string(e) }
func (e pathError) Is(target error) bool { return target == ErrBadPath }

// ValidatePath reports why p cannot be a lorry path. A lorry path names a
// repository on the Downstream Host and a working area on disk, so anything
// that could climb out of a directory or confuse a URL or a log line is
// refused: an empty path, an absolute one, "." and ".." segments, empty
// segments (leading, trailing or double slash), control characters
// (including DEL), backslashes and invalid UTF-8.
func ValidatePath(p string) error {
	if p == "" {
		return pathError("path is empty")
	}
	if !utf8.ValidString(p) {
		return pathError("path is not valid UTF-8")
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return pathError(fmt.Sprintf("path has a control character %U", r))
		}
		if r == '\\' {
			return pathError("path has a backslash")
		}
	}
	if p[0] == '/' {
		return pathError("path is absolute")
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return pathError("path has an empty segment")
		case ".", "..":
			return pathError(fmt.Sprintf("path has a %q segment", seg))
		}
	}
	return nil
}

// ValidateGlob reports why pattern cannot be used as a glob in
// lorry-controller.conf. Patterns are relative slash-separated paths; each
// segment follows path.Match, and a segment "**" stands for any number of
// directories.
func ValidateGlob(pattern string) error {
	if pattern == "" {
		return errors.New("glob is empty")
	}
	if pattern[0] == '/' {
		return fmt.Errorf("glob %q is absolute", pattern)
	}
	for _, seg := range strings.Split(trimDotSlash(pattern), "/") {
		if seg == "" {
			return fmt.Errorf("glob %q has an empty segment", pattern)
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("glob %q: %w", pattern, err)
		}
	}
	return nil
}

// MatchGlob reports whether name matches pattern with the semantics
// described at ValidateGlob. A malformed pattern matches nothing.
func MatchGlob(pattern, name string) bool {
	if ValidateGlob(pattern) != nil {
		return false
	}
	return matchSegments(splitGlob(pattern), strings.Split(name, "/"))
}

// trimDotSlash lets "./x/*.lorry" mean what it meant to the shell-glob based
// reader this configuration format comes from.
func trimDotSlash(pattern string) string {
	for strings.HasPrefix(pattern, "./") {
		pattern = strings.TrimLeft(pattern[2:], "/")
	}
	return pattern
}

// splitGlob splits a valid pattern into segments, folding runs of "**" so
// that matching stays polynomial.
func splitGlob(pattern string) []string {
	var out []string
	for _, seg := range strings.Split(trimDotSlash(pattern), "/") {
		if seg == "**" && len(out) > 0 && out[len(out)-1] == "**" {
			continue
		}
		out = append(out, seg)
	}
	return out
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return len(segs) > 0
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegments(rest, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
