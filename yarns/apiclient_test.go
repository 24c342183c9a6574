package yarns

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/apiclient"
)

// TestGeneratedClient drives a real WEBAPP, tokens on, with the client
// oapi-codegen generates from docs/openapi.yaml (package apiclient): an
// admin reads the configuration, pages through the lorries and reads
// each by its path, slashes and all; a minion runs two jobs through the
// protocol, one of them stopped by the admin. Each answer is decoded into
// the generator's types, so a document that says other than the service
// does fails here.
func TestGeneratedClient(t *testing.T) {
	r := startRig(t, map[string]string{
		"lorry-controller.conf": `[{"type": "lorries", "prefix": "delta", "globs": ["*.lorry"], "interval": "1h"}]`,
		"delta.lorry": `{
  "foo/bar": {"type": "git", "url": "https://user:hunter2@example.invalid/foo/bar.git"},
  "foo/baz": {"type": "git", "url": "https://example.invalid/foo/baz.git"},
  "foo/sub/deep": {"type": "git", "url": "https://example.invalid/deep.git"},
  "qux": {"type": "git", "url": "https://example.invalid/qux.git"},
  "a b+c%2Fd": {"type": "git", "url": "https://example.invalid/odd.git"}
}`,
	})
	defer func() {
		if t.Failed() {
			r.showLogs()
		}
	}()
	paths := []string{"delta/a b+c%2Fd", "delta/foo/bar", "delta/foo/baz", "delta/foo/sub/deep", "delta/qux"}
	ctx := context.Background()
	anon := newAPIClient(t, r.url, "")
	admin := newAPIClient(t, r.url, r.token("admin", "admin"))
	minion := newAPIClient(t, r.url, r.token("minion", "m1"))

	// Reading the configuration takes the admin's token.
	if rc, err := anon.ReadConfigurationWithResponse(ctx, nil); err != nil || rc.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("read-configuration without a token = %v, %v; want 401", status(rc), err)
	}
	wait := "3600"
	rc, err := admin.ReadConfigurationWithResponse(ctx, &apiclient.ReadConfigurationParams{Wait: &wait})
	if err != nil || rc.JSON200 == nil {
		t.Fatalf("read-configuration = %v, %v; want 200", status(rc), err)
	}
	if rc.JSON200.Lorries != len(paths) || rc.JSON200.Added != len(paths) {
		t.Fatalf("read-configuration = %+v; want %d lorries added", rc.JSON200, len(paths))
	}

	// Every lorry, two to a page, in path order; each read by its path.
	var listed []string
	limit := 2
	params := &apiclient.LorriesParams{Limit: &limit}
	for pages := 0; ; pages++ {
		if pages > len(paths) {
			t.Fatalf("more pages than lorries: %v", listed)
		}
		page, err := anon.LorriesWithResponse(ctx, params)
		if err != nil || page.JSON200 == nil {
			t.Fatalf("lorries %+v = %v, %v; want 200", params, status(page), err)
		}
		if n := len(page.JSON200.Lorries); n > limit || n == 0 {
			t.Fatalf("a page of %d lorries; want 1 to %d", n, limit)
		}
		for _, l := range page.JSON200.Lorries {
			listed = append(listed, l.Path)
		}
		if page.JSON200.Next == nil {
			break
		}
		params.After = page.JSON200.Next
	}
	if !slices.Equal(listed, paths) {
		t.Fatalf("lorries listed %q; want %q", listed, paths)
	}
	for _, p := range paths {
		l, err := anon.LorryWithResponse(ctx, p)
		if err != nil || l.JSON200 == nil {
			t.Errorf("lorry %q = %v, %v; want 200", p, status(l), err)
			continue
		}
		if l.JSON200.Path != p || l.JSON200.Kind != apiclient.KindLorry || l.JSON200.LastRun != nil {
			t.Errorf("lorry %q = path %q, kind %q, last run %v; want itself, a lorry never run", p, l.JSON200.Path, l.JSON200.Kind, l.JSON200.LastRun)
		}
		if strings.Contains(l.JSON200.Text, "hunter2") {
			t.Errorf("lorry %q shows its password: %s", p, l.JSON200.Text)
		}
	}

	// The admin moves lorries in the queue.
	mv, err := admin.MoveToBottomWithResponse(ctx, apiclient.PathParams{Path: "delta/foo/bar"})
	if err != nil || mv.JSON200 == nil || len(mv.JSON200.Queue) != len(paths) || mv.JSON200.Queue[len(paths)-1] != "delta/foo/bar" {
		t.Fatalf("move-to-bottom = %v, %v; want delta/foo/bar last", status(mv), err)
	}
	top, err := admin.MoveToTopWithFormdataBodyWithResponse(ctx, apiclient.PathParams{Path: "delta/foo/sub/deep"})
	if err != nil || top.JSON200 == nil || len(top.JSON200.Queue) == 0 || top.JSON200.Queue[0] != "delta/foo/sub/deep" {
		t.Fatalf("move-to-top = %v, %v; want delta/foo/sub/deep first", status(top), err)
	}
	if mv, err := minion.MoveToTopWithResponse(ctx, apiclient.PathParams{Path: "delta/qux"}); err != nil || mv.StatusCode() != http.StatusForbidden {
		t.Fatalf("move-to-top with a minion's token = %v, %v; want 403", status(mv), err)
	}

	// The first job: progress, stopped by the admin, ended killed.
	name := "m1"
	offer := giveMeJob(t, minion, apiclient.GiveMeJobParams{Host: "h", Pid: 10, Minion: &name})
	if offer.Path != "delta/foo/sub/deep" || offer.Kind != apiclient.KindLorry {
		t.Fatalf("give-me-job = %+v; want the lorry at the top, delta/foo/sub/deep", offer)
	}
	l, err := anon.LorryWithResponse(ctx, offer.Path)
	if err != nil || l.JSON200 == nil || l.JSON200.RunningJob == nil || *l.JSON200.RunningJob != offer.JobId {
		t.Errorf("lorry %q while its job runs = %v, %v; want running_job %d", offer.Path, status(l), err, offer.JobId)
	}
	no, progress := "no", "Counting objects: 50% (3/6)\n"
	var pid int64 = 10
	up, err := minion.JobUpdateWithFormdataBodyWithResponse(ctx, apiclient.JobUpdateParams{JobId: offer.JobId, Minion: &name, Pid: &pid,
		Exit: &no, Stdout: &progress})
	if err != nil || up.JSON200 == nil || up.JSON200.Kill {
		t.Fatalf("job-update in progress = %v, %v; want 200, no kill", status(up), err)
	}
	job := readJob(t, anon, offer.JobId)
	if job.Status != apiclient.JobStatusRunning || job.Exit != nil || job.Output != progress || job.Minion != name {
		t.Fatalf("job %d = %s, exit %v, output %q, minion %q; want running, no exit, %q, %q",
			job.JobId, job.Status, job.Exit, job.Output, job.Minion, progress, name)
	}
	stop, err := admin.StopJobWithResponse(ctx, apiclient.JobIDParams{JobId: offer.JobId})
	if err != nil || stop.JSON200 == nil || stop.JSON200.JobId != offer.JobId || stop.JSON200.Kill != true {
		t.Fatalf("stop-job = %v, %v; want 200, kill", status(stop), err)
	}
	up, err = minion.JobUpdateWithResponse(ctx, apiclient.JobUpdateParams{JobId: offer.JobId, Minion: &name, Pid: &pid, Exit: &no})
	if err != nil || up.JSON200 == nil || !up.JSON200.Kill {
		t.Fatalf("job-update after stop-job = %v, %v; want 200, kill", status(up), err)
	}
	killed := "143"
	if up, err := minion.JobUpdateWithResponse(ctx, apiclient.JobUpdateParams{JobId: offer.JobId, Minion: &name, Pid: &pid,
		Exit: &killed}); err != nil || up.JSON200 == nil {
		t.Fatalf("final job-update = %v, %v; want 200", status(up), err)
	}
	if job := readJob(t, anon, offer.JobId); job.Status != apiclient.JobStatusKilled || job.Ended == nil || job.Exit == nil || *job.Exit != 143 {
		t.Fatalf("job %d = %s, ended %v, exit %v; want killed, ended, 143", job.JobId, job.Status, job.Ended, job.Exit)
	}

	// The second job runs to success and is then forgotten.
	offer = giveMeJob(t, minion, apiclient.GiveMeJobParams{Host: "h", Pid: 10, Minion: &name})
	done, disk, out := "0", int64(4096), "done\n"
	if up, err := minion.JobUpdateWithResponse(ctx, apiclient.JobUpdateParams{JobId: offer.JobId, Minion: &name, Pid: &pid,
		Exit: &done, Stdout: &out, DiskUsage: &disk}); err != nil || up.JSON200 == nil || up.JSON200.Kill {
		t.Fatalf("final job-update = %v, %v; want 200, no kill", status(up), err)
	}
	job = readJob(t, anon, offer.JobId)
	if job.Status != apiclient.JobStatusSucceeded || job.Exit == nil || *job.Exit != 0 || job.DiskUsage == nil || *job.DiskUsage != disk {
		t.Fatalf("job %d = %s, exit %v, disk usage %v; want succeeded, 0, %d", job.JobId, job.Status, job.Exit, job.DiskUsage, disk)
	}
	l, err = anon.LorryWithResponse(ctx, offer.Path)
	if err != nil || l.JSON200 == nil || l.JSON200.RunningJob != nil || l.JSON200.LastRunExit == nil || *l.JSON200.LastRunExit != 0 {
		t.Errorf("lorry %q after its job = %v, %v; want no running job, last exit 0", offer.Path, status(l), err)
	}
	rm, err := admin.RemoveJobWithResponse(ctx, apiclient.JobIDParams{JobId: offer.JobId})
	if err != nil || rm.JSON200 == nil || rm.JSON200.JobId != offer.JobId {
		t.Fatalf("remove-job = %v, %v; want 200", status(rm), err)
	}
	if j, err := anon.JobWithResponse(ctx, offer.JobId); err != nil || j.JSON404 == nil {
		t.Fatalf("job %d once removed = %v, %v; want 404", offer.JobId, status(j), err)
	}
}

// token makes a token of role for name, as an operator does beside the
// running WEBAPP.
func (r *rig) token(role, name string) string {
	r.tb.Helper()
	out, err := exec.Command(filepath.Join(binDir, webappBin), "token", "create", "--role", role, "--name", name,
		"--statedb", r.statedb).Output()
	if err != nil {
		r.tb.Fatalf("token create --role %s --name %s: %v", role, name, err)
	}
	return strings.TrimSpace(string(out))
}

// newAPIClient is a generated client that sends token, if any.
func newAPIClient(t *testing.T, url, token string) *apiclient.ClientWithResponses {
	t.Helper()
	var opts []apiclient.ClientOption
	if token != "" {
		opts = append(opts, apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	}
	c, err := apiclient.NewClientWithResponses(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func giveMeJob(t *testing.T, c *apiclient.ClientWithResponses, p apiclient.GiveMeJobParams) apiclient.Offer {
	t.Helper()
	resp, err := c.GiveMeJobWithResponse(context.Background(), p)
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("give-me-job = %v, %v; want 200", status(resp), err)
	}
	offer, err := resp.JSON200.AsOffer()
	if err != nil || offer.JobId == 0 {
		t.Fatalf("give-me-job = %s, %v; want a job", resp.Body, err)
	}
	return offer
}

func readJob(t *testing.T, c *apiclient.ClientWithResponses, id int64) *apiclient.Job {
	t.Helper()
	resp, err := c.JobWithResponse(context.Background(), id)
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("job %d = %v, %v; want 200", id, status(resp), err)
	}
	return resp.JSON200
}

// status says what a generated client's answer was, for a failure's
// message; resp is nil when the client had none.
func status[R interface {
	StatusCode() int
	Status() string
}](resp *R) string {
	if resp == nil || (*resp).StatusCode() == 0 {
		return "no answer"
	}
	return (*resp).Status()
}
