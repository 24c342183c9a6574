package routes

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/templates"
)

// secretSpecs are specs of every source type whose addresses carry a
// password; each password holds its spec's key in capitals, and several
// hold "@".
var secretSpecs = map[string]string{
	"git":         `{"type":"git","url":"https://deploy:Pa@GITPW@git.example/x.git"}`,
	"git-escaped": `{"type":"git","url":"https://deploy:Pa\u0040ESCAPEDPW@git.example/x.git"}`,
	"git-scp":     `{"type":"git","url":"deploy:SCPPW@git.example:x.git"}`,
	"tarball":     `{"type":"tarball","url":"https://u:TARBALLPW@dl.example/x.tar.gz"}`,
	"zip":         `{"type":"zip","url":"https://u:Z@IPPW@dl.example/x.zip"}`,
	"gzip":        `{"type":"gzip","url":"https://u:GZIPPW@dl.example/x.gz"}`,
	"raw-file":    `{"type":"raw-file","urls":[{"url":"https://u:RAWPW@dl.example/f","destination":"d"}]}`,
	"svn":         `{"type":"svn","url":"svn+ssh://u:S@VNPW@svn.example/repo","layout":"standard"}`,
	"hg":          `{"type":"hg","url":"https://u:H@GPW@hg.example/repo"}`,
	"bzr":         `{"type":"bzr","url":"bzr+ssh://u:BZRPW@bzr.example/trunk"}`,
	"bzr-branches": `{"type":"bzr","branches":{"trunk":"https://u:BRANCHPW@bzr.example/trunk",` +
		`"next":"https://u:N@EXTPW@bzr.example/next"}}`,
	"cvs":     `{"type":"cvs","url":":pserver:alice:C@VSPW@cvs.example:/cvsroot","module":"m"}`,
	"cvs-ext": `{"type":"cvs","url":":ext:bob:EXTPW@cvs.example:2222/cvsroot","module":"m"}`,
}

var specPasswords = []string{"GITPW", "ESCAPEDPW", "SCPPW", "TARBALLPW", "IPPW", "GZIPPW", "RAWPW", "VNPW",
	"GPW", "BZRPW", "BRANCHPW", "EXTPW", "VSPW", "ONFPW", "NOTIFYPW"}

func rawGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}

// TestSpecSecretsHiddenEverySourceType shows a lorry of every source type
// with a password in its addresses, through every route and page that
// shows a spec or a job's output, and finds no password.
func TestSpecSecretsHiddenEverySourceType(t *testing.T) {
	ts := newTestServer(t)
	var ls []confgit.Lorry
	for name, spec := range secretSpecs {
		typ := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "-escaped"), "-scp"), "-branches")
		typ = strings.TrimSuffix(typ, "-ext")
		ls = append(ls, confgit.Lorry{Path: "s/" + name, Text: `{"` + name + `":` + spec + `}`, Type: typ,
			Interval: time.Hour, Timeout: time.Minute})
	}
	ts.conf.cfg = &confgit.Config{Commit: "c1", Lorries: ls, Errors: []confgit.FileError{{File: "bad.lorry",
		Error: `spec "x": url ":pserver:alice:C@ONFPW@cvs.example:/cvsroot" is bad`}}}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
	// A job whose output names every address, as lorry and the
	// converters print them, ends with it as its error.
	var output strings.Builder
	for _, spec := range secretSpecs {
		for _, f := range strings.Split(spec, `"`) {
			if strings.Contains(f, "@") {
				fmt.Fprintf(&output, "fetching %s\nerror: %q failed\n", f, f)
			}
		}
	}
	output.WriteString("CVSROOT=:pserver:alice:C@VSPW@cvs.example:/cvsroot\n")
	ts.call(t, "POST", "/1.0/move-to-top", url.Values{"path": {"s/cvs"}})
	job := runJob(t, ts, "m1", output.String(), "1")

	// A notification whose payload quotes an address whole.
	err := ts.DB.Update(context.Background(), func(tx *statedb.Tx) error {
		return tx.Notify(context.Background(), statedb.EventHostListingFailed, statedb.HostListingFailed{Host: "h",
			Error: "list https://u:Pa@NOTIFYPW@h/api failed"})
	})
	if err != nil {
		t.Fatal(err)
	}

	shown := map[string]string{
		"notifications": rawGet(t, ts.url+"/1.0/notifications"),
		"list":          rawGet(t, ts.url+"/1.0/lorries?limit=100"),
		"job":           rawGet(t, ts.url+fmt.Sprintf("/1.0/job/%d", job)),
		"status":        rawGet(t, ts.url+"/1.0/status"),
	}
	b := newBrowser(t, ts)
	shown["job page"] = b.page(fmt.Sprintf("/1.0/job-html/%d", job), 200)
	shown["status page"] = b.page("/1.0/status-html", 200)
	shown["notifications page"] = b.page("/1.0/notifications-html", 200)
	for name := range secretSpecs {
		shown["lorry "+name] = rawGet(t, ts.url+"/1.0/lorry/s/"+name)
		shown["lorry page "+name] = b.page(string(templates.LorryURL("s/"+name)), 200)
	}
	for where, text := range shown {
		for _, pw := range specPasswords {
			if strings.Contains(text, pw) {
				i := strings.Index(text, pw)
				t.Errorf("%s shows the password %s: …%s…", where, pw, text[max(0, i-60):min(len(text), i+20)])
			}
		}
	}
	for _, want := range []string{`:pserver:***@cvs.example:/cvsroot`, `https://***@git.example/x.git`} {
		if !strings.Contains(shown["lorry page cvs"]+shown["lorry page git"], want) {
			t.Errorf("the lorry pages lack %s", want)
		}
	}
	if !strings.Contains(shown["job"], `***@cvs.example`) {
		t.Errorf("the job's output lacks the redacted CVS root:\n%.1000s", shown["job"])
	}
}
