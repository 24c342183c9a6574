package templates

import (
	"html/template"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

func TestEveryTemplateParses(t *testing.T) {
	// Parse each file on its own with the layout, as a typo in one file
	// should name that file.
	names, err := fs.Glob(files, "*.html")
	if err != nil || len(names) < 2 {
		t.Fatalf("templates: %v, %v", names, err)
	}
	for _, name := range names {
		if name == "layout.html" {
			continue
		}
		tmpl, err := template.New("").Funcs(Funcs).ParseFS(files, "layout.html", name)
		if err != nil {
			t.Errorf("parse %s: %v", name, err)
			continue
		}
		// Each page file defines the page of its own name.
		if page := tmpl.Lookup(name); page == nil || !strings.Contains(page.Tree.Root.String(), `{{template "top" .}}`) {
			t.Errorf("%s does not define a page %s that starts with the layout", name, name)
		}
		if Pages.Lookup(name) == nil {
			t.Errorf("Pages lacks %s", name)
		}
	}
	for _, part := range []string{"top", "bottom", "button", "badge", "pager", "jobrows"} {
		if Pages.Lookup(part) == nil {
			t.Errorf("Pages lacks the part %q", part)
		}
	}
}

func TestWhen(t *testing.T) {
	p := func(n int64) *int64 { return &n }
	tests := []struct {
		name string
		t    any
		want string
	}{
		{name: "never", t: (*int64)(nil), want: "never"},
		{name: "now", t: int64(1000), want: `<time datetime="1970-01-01T00:16:40Z">1970-01-01 00:16:40 UTC (now)</time>`},
		{name: "past", t: p(1000 - 150), want: `<time datetime="1970-01-01T00:14:10Z">1970-01-01 00:14:10 UTC (2 minutes ago)</time>`},
		{name: "future", t: int64(1000 + 7200), want: `<time datetime="1970-01-01T02:16:40Z">1970-01-01 02:16:40 UTC (in 2 hours)</time>`},
	}
	for _, tc := range tests {
		if got := When(1000, tc.t); string(got) != tc.want {
			t.Errorf("%s: When = %s; want %s", tc.name, got, tc.want)
		}
	}
}

func TestRelative(t *testing.T) {
	tests := []struct {
		d    int64
		want string
	}{
		{0, "now"}, {-1, "1 second ago"}, {-59, "59 seconds ago"}, {-60, "1 minute ago"},
		{-3599, "59 minutes ago"}, {-3600, "1 hour ago"}, {-86400 * 3, "3 days ago"}, {90, "in 1 minute"},
	}
	for _, tc := range tests {
		if got := Relative(tc.d); got != tc.want {
			t.Errorf("Relative(%d) = %q; want %q", tc.d, got, tc.want)
		}
	}
}

func TestDurationSizeNum(t *testing.T) {
	p := func(n int64) *int64 { return &n }
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"seconds", Duration(int64(45)), "45s"},
		{"minutes", Duration(int64(192)), "3m 12s"},
		{"whole minutes", Duration(int64(900)), "15m"},
		{"hours", Duration(int64(7500)), "2h 5m"},
		{"days", Duration(int64(86400*4 + 3600)), "4d 1h"},
		{"negative", Duration(int64(-5)), "0s"},
		{"nil duration", Duration((*int64)(nil)), "—"},
		{"bytes", Size(int64(512)), "512 B"},
		{"KiB", Size(int64(1536)), "1.5 KiB"},
		{"MiB", Size(p(300 << 20)), "300 MiB"},
		{"GiB", Size(int64(83410198528)), "78 GiB"},
		{"unknown size", Size((*int64)(nil)), "—"},
		{"negative size", Size(int64(-1)), "—"},
		{"small number", Num(int64(999)), "999"},
		{"thousands", Num(int64(100000)), "100,000"},
		{"millions", Num(1234567), "1,234,567"},
		{"negative number", Num(int64(-1234)), "-1,234"},
		{"short", Short(12, "88ff1a960175da3f5e5a"), "88ff1a960175"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %q; want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestLorryURL(t *testing.T) {
	tests := []struct{ path, want string }{
		{"delta/foo/bar", "/1.0/lorry-html/delta/foo/bar"},
		{"odd/a#b?c%d e", "/1.0/lorry-html/odd/a%23b%3Fc%25d%20e"},
		{"x/<script>", "/1.0/lorry-html/x/%3Cscript%3E"},
	}
	for _, tc := range tests {
		if got := string(LorryURL(tc.path)); got != tc.want {
			t.Errorf("LorryURL(%q) = %q; want %q", tc.path, got, tc.want)
		}
	}
}

func TestButtonHiddenWithoutBack(t *testing.T) {
	var b strings.Builder
	btn := NewButton(Form{CSRF: "c"}, "/1.0/stop-queue-html", "Stop", "", "")
	if err := Pages.ExecuteTemplate(&b, "button", btn); err != nil || b.String() != "" {
		t.Errorf("button without back = %q, %v; want nothing", b.String(), err)
	}
	b.Reset()
	btn = NewButton(Form{Back: "/1.0/status-html?a=1&b=2", CSRF: "s3cr<t"}, "/1.0/stop-job-html", "Stop <now>", "danger", "Sure?",
		[2]string{"job_id", "7"})
	if err := Pages.ExecuteTemplate(&b, "button", btn); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`action="/1.0/stop-job-html"`, `data-confirm="Sure?"`, `name="job_id" value="7"`,
		`name="back" value="/1.0/status-html?a=1&amp;b=2#stop-job__7"`, `id="stop-job__7" class="danger">Stop &lt;now&gt;</button>`,
		`name="csrf" value="s3cr&lt;t"`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("button %s lacks %s", b.String(), w)
		}
	}
}

// TestNothingFromElsewhere keeps the pages to what the WEBAPP serves: no
// fonts, style sheets, scripts or links to other servers.
func TestNothingFromElsewhere(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href|action)="(https?:)?//|@import|url\(`)
	names, _ := fs.Glob(files, "*.html")
	for _, name := range names {
		data, err := fs.ReadFile(files, name)
		if err != nil {
			t.Fatal(err)
		}
		if m := external.FindString(string(data)); m != "" {
			t.Errorf("%s refers to something elsewhere: %q", name, m)
		}
	}
}

// TestIDs makes ids of every byte and of parts split differently: each is
// an id and a URL fragment as it is, and no two inputs make the same one.
func TestIDs(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	seen := map[string]string{}
	check := func(parts ...string) {
		t.Helper()
		id := ID(parts...)
		if !valid.MatchString(id) {
			t.Errorf("ID(%q) = %q; want letters, digits, - and _ only", parts, id)
		}
		key := strings.Join(parts, "\x00|")
		if other, ok := seen[id]; ok && other != key {
			t.Errorf("ID(%q) = %q, as ID of %q", parts, id, other)
		}
		seen[id] = key
	}
	for c := 0; c < 256; c++ {
		check("move-to-top", string(rune(c))+"x")
		check("move-to-top", "a"+string([]byte{byte(c)}))
	}
	for _, parts := range [][]string{{"a", "b"}, {"a__b"}, {"a_", "b"}, {"a", "_b"}, {"a-", "b"}, {"a", "-b"}, {"a", "", "b"}, {"a", "_", "b"}} {
		check(parts...)
	}
	b := NewButton(Form{Back: "/p"}, "/1.0/move-to-top-html", "Top", "", "", [2]string{"path", "up/x y#z"})
	if b.ID != "move-to-top__up_2fx_20y_23z" {
		t.Errorf("the id of Top for up/x y#z is %q", b.ID)
	}
}
