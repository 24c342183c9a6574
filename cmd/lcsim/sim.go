package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	// The drivers of the state database, registered as statedb opens
	// them.
	_ "lorrycontroller.dev/lc/statedb"
)

// sim is one run of the simulation.
type sim struct {
	o    options
	args webappArgs
	repo string
	logf func(string, ...any)
	rep  report
}

var client = &http.Client{Timeout: 2 * time.Hour}

// readConfig reads the configuration, waiting for it to end, and answers
// how long it took.
func (s *sim) readConfig(ctx context.Context, w *webapp) (time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, "POST", w.url+"/1.0/read-configuration?wait=3600", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("read-configuration: %d %.300s", resp.StatusCode, b)
	}
	d := time.Since(start)
	s.logf("read-configuration in %v: %.200s", d.Round(time.Millisecond), bytes.TrimSpace(b))
	return d, nil
}

// readPhase starts a WEBAPP on an empty state database, reads the
// configuration three times (first, unchanged, one file changed), and
// stops it.
func (s *sim) readPhase(ctx context.Context) error {
	s.logf("starting the WEBAPP (%s) on %s", s.args.bin, s.args.statedb)
	args := s.args
	var err error
	if s.o.profile != "" {
		if args.pprof, err = freeAddr(); err != nil {
			return err
		}
	}
	w, err := startWebapp(ctx, args)
	if err != nil {
		return err
	}
	defer w.stop()
	stopProfile := s.profile(ctx, w, "read-cpu.pprof")
	cpu0 := w.cpu()
	s.rep.ReadFirst, err = s.readConfig(ctx, w)
	s.rep.ReadCPU = w.cpu() - cpu0
	stopProfile()
	if err != nil {
		return err
	}
	s.rep.ReadRSS, s.rep.ReadPeak = w.procMem()
	s.heapProfile(ctx, w, "read-heap.pprof")
	cpu0 = w.cpu()
	if s.rep.ReadSame, err = s.readConfig(ctx, w); err != nil {
		return err
	}
	s.rep.ReadSameCPU = w.cpu() - cpu0
	if err := setMaster(ctx, s.repo, refChange); err != nil {
		return err
	}
	cpu0 = w.cpu()
	if s.rep.ReadChange, err = s.readConfig(ctx, w); err != nil {
		return err
	}
	s.rep.ReadChangeCPU = w.cpu() - cpu0
	sleep(ctx, s.o.rest)
	s.rep.RestRSS, _ = w.procMem()
	_, s.rep.ReadPeak = w.procMem()
	return nil
}

// spreadDue makes the lorries that run every interval fall due evenly
// over the next interval, as they do in an installation that has run a
// while; a configuration just read has them all due at once. The WEBAPP
// is stopped meanwhile.
func (s *sim) spreadDue(ctx context.Context) error {
	driver, dsn := "sqlite", s.args.statedb+"?_pragma=busy_timeout(10000)"
	if strings.Contains(s.args.statedb, "://") {
		driver, dsn = "pgx", s.args.statedb
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return fmt.Errorf("open the state database to spread the due times: %w", err)
	}
	defer db.Close()
	start := time.Now()
	now, iv := start.Unix(), s.o.shape.Interval
	// Due in queue order within each queue, as a lorry handed out goes
	// to the back of the queue and is due an interval later, and each
	// queue's lorries spread over the whole interval. Integers of our
	// own, written in: the placeholders differ between the databases.
	res, err := db.ExecContext(ctx, fmt.Sprintf(`UPDATE lorries SET next_due = r.due
		FROM (SELECT path, %d + (ROW_NUMBER() OVER (PARTITION BY queue ORDER BY queue_pos) - 1) * %d
				/ COUNT(*) OVER (PARTITION BY queue) AS due
			FROM lorries WHERE schedule = '' AND running_job IS NULL) AS r
		WHERE lorries.path = r.path`, now, iv))
	if err != nil {
		return fmt.Errorf("spread the due times: %w", err)
	}
	n, _ := res.RowsAffected()
	s.logf("spread %d lorries due over %ds in %v", n, iv, time.Since(start).Round(time.Millisecond))
	return nil
}

// drivePhase starts the WEBAPP again and drives the minions.
func (s *sim) drivePhase(ctx context.Context) error {
	args := s.args
	var err error
	if s.o.profile != "" {
		if args.pprof, err = freeAddr(); err != nil {
			return err
		}
	}
	start := time.Now()
	w, err := startWebapp(ctx, args)
	if err != nil {
		return err
	}
	defer w.stop()
	s.rep.Start = time.Since(start)
	first, err := s.sample(ctx, w)
	if err != nil {
		return err
	}
	s.logf("driving %d minions for %v; %d lorries due now", s.o.drive.Minions, s.o.duration, first.due)
	dctx, cancel := context.WithTimeout(ctx, s.o.duration)
	defer cancel()
	cpu0, t0 := w.cpu(), time.Now()
	var wg sync.WaitGroup
	stats := &driveStats{}
	wg.Go(func() { driveMinions(dctx, w.url, s.o.drive, stats) })
	wg.Go(func() { s.watch(dctx, w) })
	wg.Go(func() {
		if sleep(dctx, s.o.duration/2) {
			s.timePages(dctx, w)
		}
	})
	if s.o.profile != "" {
		wg.Go(func() {
			if sleep(dctx, s.o.duration/4) {
				stop := s.profile(dctx, w, "drive-cpu.pprof")
				sleep(dctx, s.o.duration/2)
				stop()
			}
		})
	}
	wg.Wait()
	window := time.Since(t0)
	cpu := w.cpu() - cpu0
	last, err := s.sample(ctx, w)
	if err != nil {
		return err
	}
	s.heapProfile(ctx, w, "drive-heap.pprof")
	s.rep.drive(stats, window, cpu, first.due, last.due, s.o.shape)
	_, s.rep.DrivePeak = w.procMem()
	s.rep.DriveRSS, _ = w.procMem()
	return nil
}

// sampled is what one look at status found.
type sampled struct {
	due        int64
	oldestWait int64
}

// sample reads status.
func (s *sim) sample(ctx context.Context, w *webapp) (sampled, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", w.url+"/1.0/status?run_queue=false", nil)
	if err != nil {
		return sampled{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return sampled{}, err
	}
	defer resp.Body.Close()
	var st struct {
		Queues []struct {
			Due           int64  `json:"due"`
			OldestDueWait *int64 `json:"oldest_due_wait"`
		} `json:"queues"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return sampled{}, fmt.Errorf("status: %d: %w", resp.StatusCode, err)
	}
	var sm sampled
	for _, q := range st.Queues {
		sm.due += q.Due
		if q.OldestDueWait != nil {
			sm.oldestWait = max(sm.oldestWait, *q.OldestDueWait)
		}
	}
	return sm, nil
}

// watch samples status every 15 seconds until ctx ends: status counts
// every lorry, which is not free with a million of them.
func (s *sim) watch(ctx context.Context, w *webapp) {
	for sleep(ctx, 15*time.Second) {
		sm, err := s.sample(ctx, w)
		if err != nil {
			continue
		}
		s.rep.mu.Lock()
		s.rep.OldestWait = max(s.rep.OldestWait, sm.oldestWait)
		s.rep.mu.Unlock()
		s.logf("due %d, oldest waiting %ds", sm.due, sm.oldestWait)
	}
}

// timePages times each page and API answer pageAsks times, under the
// minions' load, one page after another, round after round, as long as
// the drive lasts: one time alone says more of the moment it was taken
// than of the page.
func (s *sim) timePages(ctx context.Context, w *webapp) {
	pages := []string{
		"/1.0/status-html", "/1.0/lorries?limit=100", "/1.0/status?run_queue=false", "/1.0/list-queue",
		"/1.0/lorry-html/" + s.o.shape.LorryPath(0),
	}
	times := make([]pageTime, len(pages))
	for round := 0; round < pageAsks && ctx.Err() == nil; round++ {
		for i, p := range pages {
			d, code, n, err := w.get(ctx, client, p)
			if err != nil {
				s.logf("GET %s: %v", p, err)
				continue
			}
			times[i] = pageTime{Path: p, Took: append(times[i].Took, d), Code: code, Bytes: n}
		}
	}
	s.rep.mu.Lock()
	defer s.rep.mu.Unlock()
	for _, t := range times {
		if len(t.Took) > 0 {
			s.rep.Pages = append(s.rep.Pages, t)
		}
	}
}

// pageAsks is how many times timePages asks for each page.
const pageAsks = 5

// profile profiles the WEBAPP's CPU, in profiles of a few seconds each
// written to file-N.pprof in --profile (go tool pprof merges them), until
// the function it answers is called.
func (s *sim) profile(ctx context.Context, w *webapp, file string) func() {
	if s.o.profile == "" || w.pprof == "" {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := strings.TrimSuffix(file, ".pprof") + fmt.Sprintf("-%03d.pprof", i)
			if !s.saveProfile(ctx, w, "/debug/pprof/profile?seconds=5", name) {
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

func (s *sim) heapProfile(ctx context.Context, w *webapp, file string) {
	if s.o.profile != "" && w.pprof != "" {
		s.saveProfile(ctx, w, "/debug/pprof/heap", file)
	}
}

// saveProfile writes the profile at path to file in --profile, and says
// whether it did.
func (s *sim) saveProfile(ctx context.Context, w *webapp, path, file string) bool {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+w.pprof+path, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		s.logf("profile %s: %v", file, err)
		return false
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(s.o.profile, 0o755); err != nil {
		return false
	}
	f, err := os.Create(filepath.Join(s.o.profile, file))
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK
}
