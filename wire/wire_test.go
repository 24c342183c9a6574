package wire

import (
	"encoding/json"
	"math"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

const (
	id1 = "1111111111111111111111111111111111111111"
	id2 = "2222222222222222222222222222222222222222"
)

// Every JSON message encodes to the shape its readers know, field for
// field, and decodes back to itself.
func TestJSONRoundTrip(t *testing.T) {
	refs := &RefChanges{
		Created: []RefChange{{Ref: "refs/tags/v1", New: id1}},
		Updated: []RefChange{{Ref: "refs/heads/main", Old: id1, New: id2}},
		Deleted: []RefChange{},
	}
	tests := []struct {
		name string
		msg  any // a pointer to the message
		json string
	}{
		{name: "offer of a lorry", msg: &Offer{ID: 7, Path: "delta/foo", Kind: KindLorry, Text: `{"delta/foo":{"type":"git"}}`,
			Timeout: 600, PushURL: "/srv/down/delta/foo.git", AllowLocalSources: true,
			LeaseTerms: LeaseTerms{Lease: 450, KillGrace: 10}, OutputLimit: 8388608},
			json: `{"job_id":7,"path":"delta/foo","kind":"lorry","text":"{\"delta/foo\":{\"type\":\"git\"}}","timeout":600,` +
				`"push_url":"/srv/down/delta/foo.git","allow_local_sources":true,"lease":450,"kill_grace":10,"output_limit":8388608}`},
		{name: "offer of a scraper", msg: &Offer{ID: 8, Path: "s/one", Kind: KindScraper, Text: "{}", Timeout: 60,
			Scraper: &Scraper{Runtime: Runtime{Name: "py", Version: "1", ID: "abc", Python: "python3"},
				Argv: []string{"python", "-m", "scrape"}, Env: map[string]string{"A": "b"},
				Config: []ConfigFile{{Name: "c.yaml", Path: "conf/c.yaml", Content: []byte("x: 1\n")}}, FDArgs: true},
			LeaseTerms: LeaseTerms{Lease: 1, KillGrace: 2}, OutputLimit: 100},
			json: `{"job_id":8,"path":"s/one","kind":"scraper","text":"{}","timeout":60,"push_url":"",` +
				`"scraper":{"runtime":{"name":"py","version":"1","id":"abc","python":"python3"},"argv":["python","-m","scrape"],` +
				`"env":{"A":"b"},"config":[{"name":"c.yaml","path":"conf/c.yaml","content":"eDogMQo="}],"fd_args":true},` +
				`"allow_local_sources":false,"lease":1,"kill_grace":2,"output_limit":100}`},
		{name: "retired", msg: &Retired{Retire: true}, json: `{"retire":true}`},
		{name: "update answer", msg: &UpdateAnswer{Kill: true, LeaseTerms: LeaseTerms{Lease: 30, KillGrace: 5}},
			json: `{"kill":true,"lease":30,"kill_grace":5}`},
		{name: "update answer to a retired minion", msg: &UpdateAnswer{Retire: true, LeaseTerms: LeaseTerms{Lease: 30, KillGrace: 5}},
			json: `{"kill":false,"retire":true,"lease":30,"kill_grace":5}`},
		{name: "ref changes", msg: refs,
			json: `{"created":[{"ref":"refs/tags/v1","new":"` + id1 + `"}],"updated":[{"ref":"refs/heads/main","old":"` + id1 +
				`","new":"` + id2 + `"}],"deleted":[],"truncated":false}`},
		{name: "result file", msg: &ResultFile{Lorries: map[string]SpecResult{
			"delta/foo": {OK: true, Head: "trunk", Refs: refs},
			"delta/bar": {OK: false, ErrorClass: "lfs"},
		}}, json: `{"lorries":{"delta/bar":{"ok":false,"error_class":"lfs"},"delta/foo":{"ok":true,"head":"trunk","refs":` +
			`{"created":[{"ref":"refs/tags/v1","new":"` + id1 + `"}],"updated":[{"ref":"refs/heads/main","old":"` + id1 +
			`","new":"` + id2 + `"}],"deleted":[],"truncated":false}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tt.json {
				t.Errorf("encoded:\ngot  %s\nwant %s", data, tt.json)
			}
			back := reflect.New(reflect.TypeOf(tt.msg).Elem())
			if err := json.Unmarshal(data, back.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Interface(), tt.msg) {
				t.Errorf("decoded: got %+v, want %+v", back.Interface(), tt.msg)
			}
		})
	}
}

// A retired minion reads the answer that retires it with the decoding of
// an offer.
func TestRetiredAsOffer(t *testing.T) {
	data, _ := json.Marshal(Retired{Retire: true})
	var o Offer
	if err := json.Unmarshal(data, &o); err != nil || !o.Retire || o.ID != 0 {
		t.Errorf("Retired decoded as an Offer: %+v, %v; want Retire only", o, err)
	}
}

// form turns encoded form values into the parameters the WEBAPP reads,
// as a request body would carry them.
func form(t *testing.T, v url.Values) map[string]string {
	t.Helper()
	parsed, err := url.ParseQuery(v.Encode())
	if err != nil {
		t.Fatal(err)
	}
	p := map[string]string{}
	for k := range parsed {
		p[k] = parsed.Get(k)
	}
	return p
}

// Every form message decodes, from what the minion encodes, to what it
// encoded.
func TestFormRoundTrip(t *testing.T) {
	for _, r := range []JobRequest{
		{Minion: "build1-1", Host: "build1", PID: 4242},
		{Minion: "m", Host: "h", PID: 1, Queues: []string{"fast", "slow"}, Kinds: []string{KindScraper}},
		{Minion: "m", Host: "h", PID: 1, IgnoreQueues: []string{"slow"}, Kinds: []string{KindLorry, KindScraper}},
	} {
		got, err := ParseJobRequest(form(t, r.Form()))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("JobRequest %+v: got %+v, %v", r, got, err)
		}
	}

	zero, one, term, du, built, secs := int64(0), int64(1), int64(143), int64(12345), true, 1.5
	for _, u := range []Update{
		{JobID: 1, Minion: "m", PID: 7, Stdout: "out\n", Stderr: "err\n"},
		{JobID: 2, Minion: "m", PID: 7, CutBytes: 99, Stdout: "tail"},
		{JobID: 2, Minion: "m", PID: 7, Stdout: "more", StdoutOffset: &du, StderrOffset: &zero},
		{JobID: 3, Minion: "m", PID: 7, Exit: &zero, DiskUsage: &du, Head: "trunk",
			Refs: &RefChanges{Created: []RefChange{{Ref: "refs/heads/trunk", New: id1}}, Updated: []RefChange{},
				Deleted: []RefChange{{Ref: "refs/heads/gone", Old: id2}}, Truncated: true}},
		{JobID: 4, Minion: "m", PID: 7, Exit: &one, ErrorClass: "auth"},
		{JobID: 5, Minion: "m", PID: 7, RuntimeBuilt: &built, RuntimeBuildSeconds: &secs},
		{JobID: 6, Minion: "m", PID: 7, Exit: &term, ErrorClass: "internal", Stopping: true},
	} {
		got, err := ParseUpdate(form(t, u.Form()))
		if err != nil || !reflect.DeepEqual(got, u) {
			t.Errorf("Update %+v: got %+v, %v", u, got, err)
		}
	}
}

// A minion before names and kinds sends host and pid alone.
func TestJobRequestDefaults(t *testing.T) {
	got, err := ParseJobRequest(map[string]string{"host": "h", "pid": "12", "kinds": " , scraper,scraper"})
	want := JobRequest{Minion: "h-12", Host: "h", PID: 12, Kinds: []string{KindScraper}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
}

func TestParseJobRequestRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    map[string]string
		want string
	}{
		{"no host", map[string]string{"pid": "1"}, "give-me-job needs host and pid"},
		{"no pid", map[string]string{"host": "h"}, "give-me-job needs host and pid"},
		{"pid 0", map[string]string{"host": "h", "pid": "0"}, "give-me-job needs host and pid"},
		{"bad pid", map[string]string{"host": "h", "pid": "x"}, `parameter pid: "x" is not an integer`},
		{"pid -1", map[string]string{"host": "h", "pid": "-1"}, "pid -1 is no process id"},
		{"pid -4", map[string]string{"host": "h", "pid": "-4"}, "pid -4 is no process id"},
		{"smallest pid", map[string]string{"host": "h", "pid": "-9223372036854775808"}, "pid -9223372036854775808 is no process id"},
		{"bad kind", map[string]string{"host": "h", "pid": "1", "kinds": "lorry,mirror"}, `kinds: "mirror" is neither lorry nor scraper`},
	} {
		if _, err := ParseJobRequest(tt.p); err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v; want %q", tt.name, err, tt.want)
		}
	}
}

func TestParseUpdateRefuses(t *testing.T) {
	ok := func(more ...string) map[string]string {
		p := map[string]string{"job_id": "1", "minion": "m", "pid": "7", "exit": "no"}
		for i := 0; i < len(more); i += 2 {
			p[more[i]] = more[i+1]
		}
		return p
	}
	refs := `{"created":[{"ref":"refs/heads/a","new":"` + id1 + `"}]}`
	for _, tt := range []struct {
		name string
		p    map[string]string
		want string // the start of the error
	}{
		{"no job", map[string]string{"exit": "no"}, "missing parameter job_id"},
		{"job 0", ok("job_id", "0"), "job_id 0 is not a job id"},
		{"bad job", ok("job_id", "x"), `parameter job_id: "x" is not an integer`},
		{"bad pid", ok("pid", "x"), `parameter pid: "x" is not an integer`},
		{"bad exit", ok("exit", "yes"), `exit "yes" is neither "no" nor an exit code`},
		{"bad disk usage", ok("disk_usage", "lots"), `parameter disk_usage: "lots" is not an integer`},
		{"negative cut", ok("cut_bytes", "-1"), "cut_bytes -1 is negative"},
		{"stdout offset alone", ok("stdout_offset", "1"), "stdout_offset and stderr_offset are sent together"},
		{"stderr offset alone", ok("stderr_offset", "1"), "stdout_offset and stderr_offset are sent together"},
		{"negative offset", ok("stdout_offset", "0", "stderr_offset", "-1"), "parameter stderr_offset: -1 is negative"},
		{"bad offset", ok("stdout_offset", "x", "stderr_offset", "0"), `parameter stdout_offset: "x" is not an integer`},
		{"bad runtime_built", ok("runtime_built", "maybe"), "parameter runtime_built:"},
		{"bad build seconds", ok("runtime_build_seconds", "NaN"), "parameter runtime_build_seconds:"},
		{"bad head", ok("exit", "0", "head", "a..b"), `parameter head: "a..b" is not a branch name`},
		{"head while running", ok("head", "main"), "head is reported with the final update only"},
		{"bad refs", ok("exit", "0", "refs", "{"), "parameter refs:"},
		{"refs while running", ok("refs", refs), "refs are reported with the final update only"},
		{"bad error class", ok("exit", "1", "error_class", "Auth"), `parameter error_class: "Auth" is not an error class`},
		{"long error class", ok("exit", "1", "error_class", strings.Repeat("a", MaxErrorClass+1)), "parameter error_class:"},
		{"error class while running", ok("error_class", "auth"), "error_class is reported with the final update only"},
		{"bad stopping", ok("exit", "143", "stopping", "soon"), `parameter stopping: "soon" is neither true nor false`},
		{"stopping while running", ok("stopping", "true"), "stopping is reported with the final update of a job that did not succeed only"},
		{"stopping with success", ok("exit", "0", "stopping", "true"), "stopping is reported with the final update of a job that did not succeed only"},
	} {
		if _, err := ParseUpdate(tt.p); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: got %v; want an error starting %q", tt.name, err, tt.want)
		}
	}
}

func TestParseRefs(t *testing.T) {
	good := `{"created":[{"ref":"refs/tags/v1","new":"` + id1 + `"}],"updated":[],"deleted":[{"ref":"refs/heads/gone","old":"` + id2 + `"}],"truncated":true}`
	c, err := ParseRefs(good)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := json.Marshal(c); string(data) != good {
		t.Errorf("ParseRefs(%s) encodes as %s", good, data)
	}
	if c, err := ParseRefs(`{}`); err != nil || c.Created == nil || c.Updated == nil || c.Deleted == nil {
		t.Errorf(`ParseRefs("{}") = %+v, %v; want empty lists, never nil`, c, err)
	}
	if c, err := ParseRefs(""); c != nil || err != nil {
		t.Errorf(`ParseRefs("") = %v, %v; want nil, nil`, c, err)
	}
	for _, bad := range []struct{ name, refs string }{
		{"not JSON", `{"created": [`},
		{"two values", `{} {}`},
		{"unknown field", `{"renamed": []}`},
		{"not a ref", `{"created":[{"ref":"main","new":"` + id1 + `"}]}`},
		{"bad ref name", `{"created":[{"ref":"refs/heads/a..b","new":"` + id1 + `"}]}`},
		{"short id", `{"created":[{"ref":"refs/heads/a","new":"1111"}]}`},
		{"uppercase id", `{"created":[{"ref":"refs/heads/a","new":"` + strings.ToUpper("abcdef"+id1[6:]) + `"}]}`},
		{"created with old", `{"created":[{"ref":"refs/heads/a","old":"` + id1 + `","new":"` + id2 + `"}]}`},
		{"updated without old", `{"updated":[{"ref":"refs/heads/a","new":"` + id2 + `"}]}`},
		{"deleted with new", `{"deleted":[{"ref":"refs/heads/a","old":"` + id1 + `","new":"` + id2 + `"}]}`},
		{"too many", `{"created":[` + strings.Repeat(`{"ref":"refs/heads/a","new":"`+id1+`"},`, MaxRefsPerKind) + `{"ref":"refs/heads/a","new":"` + id1 + `"}]}`},
		{"too large", `{"created":[{"ref":"refs/heads/` + strings.Repeat("a", MaxRefsBytes) + `","new":"` + id1 + `"}]}`},
	} {
		if c, err := ParseRefs(bad.refs); err == nil {
			t.Errorf("ParseRefs of %s = %+v; want an error", bad.name, c)
		}
	}
}

// lorry cuts each list at MaxRefsPerKind and says so.
func TestRefChangesCut(t *testing.T) {
	many := make([]RefChange, MaxRefsPerKind+1)
	for i := range many {
		many[i] = RefChange{Ref: "refs/tags/t", New: id1}
	}
	for _, tt := range []struct {
		name      string
		in        *RefChanges
		created   int
		truncated bool
	}{
		{name: "none", in: &RefChanges{}},
		{name: "at the bound", in: &RefChanges{Created: many[:MaxRefsPerKind]}, created: MaxRefsPerKind},
		{name: "over it", in: &RefChanges{Deleted: many[:1], Created: many}, created: MaxRefsPerKind, truncated: true},
	} {
		got := tt.in.Cut()
		if len(got.Created) != tt.created || got.Truncated != tt.truncated || got.Updated == nil {
			t.Errorf("%s: got %d created, truncated %v, updated %v; want %d, %v, []", tt.name, len(got.Created), got.Truncated, got.Updated, tt.created, tt.truncated)
		}
	}
	if (*RefChanges)(nil).Cut() != nil {
		t.Error("nil.Cut() is not nil")
	}
}

func TestBadBranch(t *testing.T) {
	for _, name := range []string{"trunk", "main", "feature/x", "release-1.2", "v1@x", "ünïcode"} {
		if why := BadBranch(name); why != "" {
			t.Errorf("BadBranch(%q) = %q; want it accepted", name, why)
		}
	}
	for _, name := range []string{"HEAD", "-x", "a..b", "a.", "a/.b", ".a", "a.lock", "a/b.lock/c", "a//b", "/a", "a/",
		"a b", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", "a@{1}", "@", "a\x01", "a\x7f"} {
		if BadBranch(name) == "" {
			t.Errorf("BadBranch(%q) accepted it; want a refusal", name)
		}
	}
}

func TestCutMark(t *testing.T) {
	if got, want := CutMark(4), "\n[... 4 bytes of output cut ...]\n"; got != want {
		t.Errorf("CutMark(4) = %q; want %q", got, want)
	}
	if n := len(CutMark(math.MaxInt64)); n > MaxCutMark {
		t.Errorf("the longest cut mark takes %d bytes, more than MaxCutMark %d", n, MaxCutMark)
	}
}
