package minion

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/wire"
)

// The final update carries the head and the ref changes that lorry wrote
// to its result descriptor only when the job succeeded, and the error
// class only when it failed, and then only when the result names one for
// the job's spec; nothing of it is left after the job.
const sha1 = "0123456789abcdef0123456789abcdef01234567"

func TestFinalUpdateHead(t *testing.T) {
	tests := []struct {
		name   string
		result string // written to --result-fd; "" writes nothing
		exit   int
		want   string
		refs   string // the refs parameter wanted; "" for none
		class  string // the error_class parameter wanted; "" for none
	}{
		{name: "head", result: `{"lorries": {"delta/foo": {"ok": true, "head": "trunk"}}}`, want: "trunk"},
		{name: "spec named otherwise", result: `{"lorries": {"foo": {"ok": true, "head": "trunk"}}}`, want: "trunk"},
		{name: "several specs", result: `{"lorries": {"delta/bar": {"ok": true, "head": "side"}, "delta/foo": {"ok": true, "head": "trunk"}}}`, want: "trunk"},
		{name: "failed job", result: `{"lorries": {"delta/foo": {"ok": false}}}`, exit: 1, want: ""},
		{name: "failed job with a class", result: `{"lorries": {"delta/foo": {"ok": false, "error_class": "auth"}}}`, exit: 1, class: "auth"},
		{name: "class of a job that succeeded", result: `{"lorries": {"delta/foo": {"ok": true, "head": "trunk", "error_class": "auth"}}}`, want: "trunk"},
		{name: "failed spec", result: `{"lorries": {"delta/foo": {"ok": false, "head": "trunk"}}}`, want: ""},
		{name: "no head", result: `{"lorries": {"delta/foo": {"ok": true}}}`, want: ""},
		{name: "no file", want: ""},
		{name: "not JSON", result: `{"lorries": `, want: ""},
		{name: "refs", want: "trunk",
			result: `{"lorries": {"delta/foo": {"ok": true, "head": "trunk", "refs": {"created": [{"ref": "refs/heads/trunk", "new": "` + sha1 + `", "extra": 1}], "updated": [], "deleted": [], "truncated": true}}}}`,
			refs:   `{"created":[{"ref":"refs/heads/trunk","new":"` + sha1 + `"}],"updated":[],"deleted":[],"truncated":true}`},
		{name: "refs of a failed job", exit: 1,
			result: `{"lorries": {"delta/foo": {"ok": true, "refs": {"created": [{"ref": "refs/heads/trunk", "new": "` + sha1 + `"}]}}}}`},
		{name: "refs too large", want: "trunk",
			result: `{"lorries": {"delta/foo": {"ok": true, "head": "trunk", "refs": {"created": [{"ref": "refs/heads/` + strings.Repeat("x", wire.MaxRefsBytes) + `", "new": "` + sha1 + `"}]}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			content := filepath.Join(t.TempDir(), "result")
			if err := os.WriteFile(content, []byte(tt.result), 0o644); err != nil {
				t.Fatal(err)
			}
			write := ""
			if tt.result != "" {
				write = `cat ` + sh(content) + ` >&"$result"`
			}
			lorry := writeLorry(t, `
while [ $# -gt 0 ]; do
	case "$1" in --result-fd) result=$2; shift ;; esac
	shift
done
`+write+`
exit `+strconv.Itoa(tt.exit))
			m, _ := newTestMinion(t, f, lorry)
			f.giveMeJob = oneJob(jobAnswer(5, "delta/foo", "lorry", `{"delta/foo": {"type": "git"}}`, ""))
			if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
				t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
			}
			updates := f.delivered()
			final := updates[len(updates)-1]
			if got := final.Form.Get("exit"); got != strconv.Itoa(tt.exit) {
				t.Errorf("exit: got %q, want %d", got, tt.exit)
			}
			if got, sent := final.Form.Get("head"), final.Form.Has("head"); got != tt.want || sent != (tt.want != "") {
				t.Errorf("head: got %q (sent %v), want %q", got, sent, tt.want)
			}
			if got, sent := final.Form.Get("refs"), final.Form.Has("refs"); got != tt.refs || sent != (tt.refs != "") {
				t.Errorf("refs: got %q (sent %v), want %q", got, sent, tt.refs)
			}
			if got, sent := final.Form.Get("error_class"), final.Form.Has("error_class"); got != tt.class || sent != (tt.class != "") {
				t.Errorf("error_class: got %q (sent %v), want %q", got, sent, tt.class)
			}
			for i, q := range updates[:len(updates)-1] {
				if q.Form.Has("head") || q.Form.Has("refs") || q.Form.Has("error_class") {
					t.Errorf("update %d of a running job has head %q", i, q.Form.Get("head"))
				}
			}
			if entries, err := os.ReadDir(m.jobDir()); err == nil && len(entries) != 0 {
				t.Errorf("job directory after the job holds %v, want nothing", entries)
			}
		})
	}
}
