package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// pageTime is the times a page or API answer took, each time it was
// asked, and its last answer's status and size.
type pageTime struct {
	Path  string
	Took  []time.Duration
	Code  int
	Bytes int64
}

// median is the median of the times p took.
func (p pageTime) median() time.Duration {
	t := slices.Sorted(slices.Values(p.Took))
	return t[len(t)/2]
}

// report is what the simulation measured.
type report struct {
	mu sync.Mutex

	ReadFirst, ReadSame, ReadChange time.Duration
	// The WEBAPP's CPU time in each read.
	ReadCPU, ReadSameCPU, ReadChangeCPU time.Duration
	// ReadRSS and ReadPeak are the WEBAPP's resident memory right after
	// the first read and at its peak over the three reads; RestRSS a few
	// seconds after them.
	ReadRSS, ReadPeak, RestRSS int64
	// Start is how long the WEBAPP took to answer on the database read.
	Start time.Duration

	Window                     time.Duration
	HandedOut, Ended, NoJob    int64
	DueStart, DueEnd           int64
	GiveMeJob, JobUpdate       [3]time.Duration
	GiveMeJobN, JobUpdateN     int
	GiveMeJobErr, JobUpdateErr int
	CPU                        time.Duration
	OldestWait                 int64
	DrivePeak, DriveRSS        int64
	DueRate                    float64 // by the lorries' interval
	Pages                      []pageTime
	DBSize                     int64
}

// drive records what the minions saw.
func (r *report) drive(st *driveStats, window, cpu time.Duration, dueStart, dueEnd int64, shape Shape) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Window, r.CPU = window, cpu
	r.HandedOut, r.Ended, r.NoJob = st.handedOut.Load(), st.ended.Load(), st.noJob.Load()
	r.DueStart, r.DueEnd = dueStart, dueEnd
	var p50, p99, mx time.Duration
	r.GiveMeJobN, p50, p99, mx = st.giveMeJob.quantiles()
	r.GiveMeJob = [3]time.Duration{p50, p99, mx}
	r.JobUpdateN, p50, p99, mx = st.jobUpdate.quantiles()
	r.JobUpdate = [3]time.Duration{p50, p99, mx}
	r.GiveMeJobErr, r.JobUpdateErr = st.giveMeJob.errs, st.jobUpdate.errs
	r.DueRate = float64(shape.intervalLorries()) / float64(shape.Interval)
}

func mib(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// print writes the report.
func (r *report) print(w io.Writer, o options) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sh := o.shape
	fmt.Fprintf(w, "lcsim: %d lorries in %d files, %d sections/queues of %d threads, 1 file in %d scheduled, interval %ds; %d minions for %v; statedb %s\n",
		sh.Lorries, sh.files(), sh.Sections, sh.Threads, sh.CronEvery, sh.Interval, o.drive.Minions, o.duration, backend(o.statedb))
	fmt.Fprintf(w, "read-configuration: first %v, unchanged %v, one file changed %v (WEBAPP CPU %v, %v, %v)\n",
		r.ReadFirst.Round(time.Millisecond), r.ReadSame.Round(time.Millisecond), r.ReadChange.Round(time.Millisecond),
		r.ReadCPU.Round(time.Millisecond), r.ReadSameCPU.Round(time.Millisecond), r.ReadChangeCPU.Round(time.Millisecond))
	fmt.Fprintf(w, "WEBAPP memory: peak %s over the reads (%s right after the first), resting %s; peak %s while driving, %s at its end\n",
		mib(r.ReadPeak), mib(r.ReadRSS), mib(r.RestRSS), mib(r.DrivePeak), mib(r.DriveRSS))
	fmt.Fprintf(w, "WEBAPP start on the database: %v\n", r.Start.Round(time.Millisecond))
	fmt.Fprintf(w, "give-me-job: %d answers, p50 %s, p99 %s, max %s, %d failed\n",
		r.GiveMeJobN, ms(r.GiveMeJob[0]), ms(r.GiveMeJob[1]), ms(r.GiveMeJob[2]), r.GiveMeJobErr)
	fmt.Fprintf(w, "job-update: %d answers, p50 %s, p99 %s, max %s, %d failed\n",
		r.JobUpdateN, ms(r.JobUpdate[0]), ms(r.JobUpdate[1]), ms(r.JobUpdate[2]), r.JobUpdateErr)
	secs := r.Window.Seconds()
	// What fell due in the window: what was handed out plus what the
	// backlog grew by.
	dueSeen := float64(r.HandedOut+r.DueEnd-r.DueStart) / secs
	fmt.Fprintf(w, "jobs: %.1f handed out/s, %.1f due/s (by interval %.1f/s); %d ended, %d asks found none; due backlog %d -> %d; oldest due wait %ds\n",
		float64(r.HandedOut)/secs, dueSeen, r.DueRate, r.Ended, r.NoJob, r.DueStart, r.DueEnd, r.OldestWait)
	if r.HandedOut > 0 {
		fmt.Fprintf(w, "WEBAPP CPU: %v over %v, %s per job handed out\n",
			r.CPU.Round(time.Millisecond), r.Window.Round(time.Second), ms(r.CPU/time.Duration(r.HandedOut)))
	}
	fmt.Fprintf(w, "database size: %s\n", mib(r.DBSize))
	for _, p := range r.Pages {
		fmt.Fprintf(w, "GET %s: %s (%d, %d bytes; median of %d, %s to %s)\n", p.Path, ms(p.median()), p.Code, p.Bytes,
			len(p.Took), ms(slices.Min(p.Took)), ms(slices.Max(p.Took)))
	}
}

func backend(statedb string) string {
	if strings.Contains(statedb, "://") {
		return "PostgreSQL"
	}
	return "SQLite"
}
