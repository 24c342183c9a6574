package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Drive is how the simulated minions behave.
type Drive struct {
	Minions int
	// Idle is how long an idle minion waits between asks, give or take
	// a fifth.
	Idle time.Duration
	// Update is how often a minion sends job-update while it holds a
	// job.
	Update time.Duration
	// TailShare of the jobs take minutes; the rest under a second.
	TailShare float64
}

// holdTime draws how long a job runs: most under a second, a share of
// them a long tail of minutes.
func (d Drive) holdTime(r *rand.Rand) time.Duration {
	if r.Float64() < d.TailShare {
		// 20 s and on, a minute more on average, at most 10 minutes.
		s := 20 + r.ExpFloat64()*60
		return time.Duration(math.Min(s, 600) * float64(time.Second))
	}
	return time.Duration((0.05 + r.Float64()*0.75) * float64(time.Second))
}

// latencies are the times of the answers to one route.
type latencies struct {
	mu   sync.Mutex
	ds   []time.Duration
	errs int
}

func (l *latencies) add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs++
		return
	}
	l.ds = append(l.ds, d)
}

// quantiles are p50, p99 and max of what was added.
func (l *latencies) quantiles() (n int, p50, p99, max time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ds) == 0 {
		return 0, 0, 0, 0
	}
	s := slices.Clone(l.ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return len(s), at(0.50), at(0.99), s[len(s)-1]
}

// driveStats is what the minions saw.
type driveStats struct {
	giveMeJob, jobUpdate latencies
	handedOut, ended     atomic.Int64
	noJob                atomic.Int64
}

// minionSim is one simulated minion.
type minionSim struct {
	base  string
	c     *http.Client
	d     Drive
	stats *driveStats
	pid   int
	r     *rand.Rand
}

// driveMinions runs d.Minions minions against base until ctx ends; a job
// held then is ended at once.
func driveMinions(ctx context.Context, base string, d Drive, stats *driveStats) {
	tr := &http.Transport{MaxIdleConns: d.Minions * 2, MaxIdleConnsPerHost: d.Minions * 2, IdleConnTimeout: time.Minute}
	c := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	for i := range d.Minions {
		m := &minionSim{base: base, c: c, d: d, stats: stats, pid: 1000 + i,
			r: rand.New(rand.NewPCG(uint64(i), 42))}
		wg.Go(func() { m.run(ctx) })
	}
	wg.Wait()
}

func (m *minionSim) jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*m.r.Float64()))
}

// sleep waits d or until ctx ends, and says whether ctx is still on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (m *minionSim) run(ctx context.Context) {
	// The minions start spread over one idle wait, as they would after
	// running a while.
	if !sleep(ctx, time.Duration(m.r.Float64()*float64(m.d.Idle))) {
		return
	}
	for ctx.Err() == nil {
		id, err := m.ask(ctx)
		switch {
		case err != nil:
			if !sleep(ctx, time.Second) {
				return
			}
		case id == 0:
			m.stats.noJob.Add(1)
			if !sleep(ctx, m.jitter(m.d.Idle)) {
				return
			}
		default:
			m.stats.handedOut.Add(1)
			m.hold(ctx, id)
		}
	}
}

// ask asks for a job, and answers its id, or 0 for none.
func (m *minionSim) ask(ctx context.Context) (int64, error) {
	// As a minion that takes both kinds asks: without kinds.
	form := url.Values{"host": {"lcsim"}, "pid": {fmt.Sprint(m.pid)}}
	start := time.Now()
	code, body, err := m.post(ctx, "give-me-job", form)
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if err == nil && code != http.StatusOK && code != http.StatusNoContent {
		err = fmt.Errorf("give-me-job: %d %s", code, body)
	}
	m.stats.giveMeJob.add(time.Since(start), err)
	if err != nil || code == http.StatusNoContent {
		return 0, err
	}
	var job struct {
		ID int64 `json:"job_id"`
	}
	if err := json.Unmarshal(body, &job); err != nil || job.ID == 0 {
		return 0, fmt.Errorf("give-me-job: answer %.200s", body)
	}
	return job.ID, nil
}

// hold runs job id for a drawn time, updating it as a minion does, and
// ends it; at the end of ctx it ends it at once.
func (m *minionSim) hold(ctx context.Context, id int64) {
	end := time.Now().Add(m.d.holdTime(m.r))
	m.update(ctx, id, "", "Fetching origin\n")
	for {
		wait := min(time.Until(end), m.d.Update)
		if wait > 0 && !sleep(ctx, wait) {
			break
		}
		if !time.Now().Before(end) {
			break
		}
		m.update(ctx, id, "", fmt.Sprintf("Receiving objects: %d%%\n", m.r.IntN(100)))
	}
	m.update(context.WithoutCancel(ctx), id, "0", "Everything up-to-date\n")
	m.stats.ended.Add(1)
}

func (m *minionSim) update(ctx context.Context, id int64, exit, stdout string) {
	form := url.Values{"job_id": {fmt.Sprint(id)}, "pid": {fmt.Sprint(m.pid)}, "stdout": {stdout}}
	if exit != "" {
		form.Set("exit", exit)
		form.Set("disk_usage", "1048576")
	}
	start := time.Now()
	code, body, err := m.post(ctx, "job-update", form)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("job-update: %d %s", code, body)
	}
	if ctx.Err() == nil {
		m.stats.jobUpdate.add(time.Since(start), err)
	}
}

func (m *minionSim) post(ctx context.Context, route string, form url.Values) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", m.base+"/1.0/"+route, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := m.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}
