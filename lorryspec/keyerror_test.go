package lorryspec

import (
	"errors"
	"testing"
)

// A problem with one key of a spec names the key, for tools to point at.
func TestCheckNamesKey(t *testing.T) {
	for _, tc := range []struct {
		name, spec, wantKey string
	}{
		{name: "no type", spec: `{"url": "u"}`, wantKey: "type"},
		{name: "unknown type", spec: `{"type": "gti", "url": "u"}`, wantKey: "type"},
		{name: "no url", spec: `{"type": "git"}`, wantKey: "url"},
		{name: "url of the wrong kind", spec: `{"type": "git", "url": ["u"]}`, wantKey: "url"},
		{name: "negative strip", spec: `{"type": "tarball", "url": "u", "strip": -1}`, wantKey: "strip"},
		{name: "raw-file destination", spec: `{"type": "raw-file", "urls": [{"url": "u", "destination": "../x"}]}`, wantKey: "urls"},
		{name: "svn layout", spec: `{"type": "svn", "url": "u", "layout": "odd"}`, wantKey: "layout"},
		{name: "cvs module", spec: `{"type": "cvs", "url": "u"}`, wantKey: "module"},
		{name: "not an object", spec: `"git"`, wantKey: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := DecodeJSON([]byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Check(v)
			if err == nil {
				t.Fatalf("Check(%s) = nil; want an error", tc.spec)
			}
			var ke *KeyError
			got := ""
			if errors.As(err, &ke) {
				got = ke.Key
			}
			if got != tc.wantKey {
				t.Errorf("Check(%s) = %v, key %q; want key %q", tc.spec, err, got, tc.wantKey)
			}
		})
	}
}
