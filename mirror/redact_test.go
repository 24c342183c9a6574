package mirror_test

import (
	"strings"
	"testing"
)

// TestConvertersHideParsedCredentials runs converters on upstreams that
// refuse connections, addressed with a password holding "@" and, for
// cvs, as a pserver CVS root: neither the job's output nor the error may
// show the password.
func TestConvertersHideParsedCredentials(t *testing.T) {
	t.Parallel()
	cvNeed(t, cvTool{"git-svn", "git-svn"}, cvTool{"git-remote-hg", "git-remote-hg"}, cvTool{"brz", "brz"},
		cvTool{"cvs", "cvs"}, cvTool{"cvsps", "cvsps"}, cvTool{"git-cvsimport", "git-cvs"})
	const secret = "Wh1sper"
	// Nothing listens on the discard port of the loopback address.
	tests := []struct {
		typ    string
		fields map[string]any
		shown  string
	}{
		{"svn", map[string]any{"url": "http://someone:Pa@" + secret + "@127.0.0.1:9/repo"}, "http://***@127.0.0.1:9/repo"},
		{"hg", map[string]any{"url": "http://someone:Pa@" + secret + "@127.0.0.1:9/repo"}, "http://***@127.0.0.1:9/repo"},
		{"bzr", map[string]any{"url": "http://someone:Pa@" + secret + "@127.0.0.1:9/repo"}, "http://***@127.0.0.1:9/repo"},
		// git cvsimport splits a CVS root at its first "@", so a CVS
		// password cannot hold one.
		{"cvs", map[string]any{"url": ":pserver:alice:" + secret + "@127.0.0.1:9/cvsroot", "module": "mod"}, ":pserver:***@127.0.0.1:9/cvsroot"},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			m := newCvMirror(t, tc.typ, tc.fields)
			res, out := m.run()
			if res.Err == nil {
				t.Fatalf("got success, want a failure to connect\noutput:\n%s", out)
			}
			if strings.Contains(out, secret) || strings.Contains(res.Err.Error(), secret) {
				t.Errorf("the password shows:\nerror: %v\noutput:\n%s", res.Err, out)
			}
			if !strings.Contains(out+res.Err.Error(), tc.shown) {
				t.Errorf("got error %v and output\n%s\nwant the address shown as %s", res.Err, out, tc.shown)
			}
		})
	}
}
