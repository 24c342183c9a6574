package routes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
)

// lowDiskBytes is the free space under which status warns.
const lowDiskBytes = 1 << 30

// statusJSON is the answer to status. The run queue is written after the
// other fields, one lorry at a time, so that a queue of 100,000 lorries is
// never held in memory whole.
type statusJSON struct {
	RunningQueue bool                `json:"running_queue"`
	MaxJobs      *int64              `json:"max_jobs"`
	Queues       []queueJSON         `json:"queues"`
	HostMaxJobs  map[string]int64    `json:"host_max_jobs"`
	Lorries      statedb.LorryCounts `json:"lorries"`
	Hosts        []hostJSON          `json:"hosts"`
	RunningJobs  []int64             `json:"running_jobs"`
	Minions      []minionJSON        `json:"minions"`
	Config       statedb.ConfigState `json:"configuration"`
	// Applying is the application of the configuration under way in
	// this WEBAPP, if any.
	Applying   *control.ConfigProgress `json:"applying_configuration"`
	Timestamp  int64                   `json:"timestamp"`
	DiskFree   int64                   `json:"disk_free"`
	WarningMsg string                  `json:"warning_msg"`
	// AllowLocalSources is the WEBAPP's --allow-local-sources.
	AllowLocalSources bool `json:"allow_local_sources"`
	// Replicas are the WEBAPPs sharing the STATEDB.
	Replicas []replicaJSON `json:"replicas"`
}

// replicaJSON is a WEBAPP sharing the STATEDB, with the kinds of work
// whose lease it holds, and whether it is up or down
// (control.ReplicaState).
type replicaJSON struct {
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	LastSeen int64    `json:"last_seen"`
	State    string   `json:"state"`
	Leases   []string `json:"leases"`
}

// copyFailed notes the outcome of the last write of the on-disk status
// page: why it failed, or "" if it was written.
func (s *Server) copyFailed(why string) {
	s.copyMu.Lock()
	defer s.copyMu.Unlock()
	s.copyErr = why
}

// copyFailure is why the last write of the on-disk status page failed,
// or "" if it did not.
func (s *Server) copyFailure() string {
	s.copyMu.Lock()
	defer s.copyMu.Unlock()
	return s.copyErr
}

// statusWire is everything status shows but the run queue, from what
// rd read.
func (s *Server) statusWire(rd control.StatusRead) statusJSON {
	st := statusJSON{Applying: rd.Applying, Timestamp: rd.Now, AllowLocalSources: s.AllowLocalSources,
		RunningQueue: rd.RunningQueue, MaxJobs: rd.MaxJobs, Queues: queueStates(rd.Queues, rd.Now),
		HostMaxJobs: rd.HostMaxJobs, Lorries: rd.Lorries, RunningJobs: list(rd.RunningJobs), Config: rd.Config}
	st.Hosts = make([]hostJSON, len(rd.Hosts))
	for i, h := range rd.Hosts {
		st.Hosts[i] = hostWire(h)
	}
	st.Minions = make([]minionJSON, len(rd.Minions))
	for i, m := range rd.Minions {
		st.Minions[i] = minionWire(m, rd.Now, s.aliveWithin())
	}
	st.Config.Errors, st.Config.Runtimes = list(st.Config.Errors), list(st.Config.Runtimes)
	for i, e := range st.Config.Errors {
		// A file's error may quote a value of the file, an address with
		// its credentials among them.
		st.Config.Errors[i].Error = redact.URLs(e.Error)
	}
	st.Replicas = make([]replicaJSON, len(rd.Replicas))
	for i, r := range rd.Replicas {
		st.Replicas[i] = replicaJSON{Name: r.Name, URL: r.URL, LastSeen: r.LastSeen,
			State: s.ReplicaState(r, rd.Now), Leases: list(r.Leases)}
	}
	st.DiskFree = -1
	if dir := s.StateDir(); dir != "" {
		st.DiskFree = diskFree(dir)
	}
	var warnings []string
	if st.DiskFree >= 0 && st.DiskFree < lowDiskBytes {
		warnings = append(warnings, fmt.Sprintf("only %d bytes free on the state database's disk", st.DiskFree))
	}
	if st.Config.Failure != "" && st.Config.FailAt >= st.Config.ReadAt {
		warnings = append(warnings, "last read-configuration failed: "+st.Config.Failure)
	}
	st.WarningMsg = strings.Join(warnings, "; ")
	return st
}

// diskFree is the space available to unprivileged users on dir's file
// system, or -1 if it cannot be told.
func diskFree(dir string) int64 {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return -1
	}
	return int64(fs.Bavail) * int64(fs.Bsize)
}

// statusPage is how many lorries of the run queue status reads in one
// read transaction before writing them.
const statusPage = 1000

// status writes the run queue a page at a time, each page read in a read
// transaction of its own that ends before the page is written: a client
// that reads slowly, or not at all, must never keep a read session (and
// with four of them, every read) waiting on the network.
//
// With run_queue=false the answer leaves run_queue out, and the queue is
// not read: a monitor that polls status for the rest need not pay for a
// run queue of 100,000 lorries each time.
func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	withQueue := true
	if q := r.URL.Query(); q.Has("run_queue") {
		switch v := q.Get("run_queue"); v {
		case "true":
		case "false":
			withQueue = false
		default:
			return errorf(http.StatusBadRequest, "run_queue %q is neither true nor false", v)
		}
	}
	req := control.StatusRequest{}
	if withQueue {
		req.Queue = statusPage
	}
	rd, err := s.Status(ctx, req)
	if err != nil {
		return err
	}
	st, page := s.statusWire(rd), rd.Queue
	// The pages show a failed copy in a banner of their own.
	if why := s.copyFailure(); why != "" {
		why = "the on-disk copy of the status page could not be written: " + why
		st.WarningMsg = strings.Join(slices.DeleteFunc([]string{st.WarningMsg, why}, isEmpty), "; ")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(st); err != nil {
		return err
	}
	if !withQueue {
		w.Header().Set("Content-Type", "application/json")
		_, err := w.Write(buf.Bytes())
		return err
	}
	head := bytes.TrimSpace(buf.Bytes())
	w.Header().Set("Content-Type", "application/json")
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head[:len(head)-1])
	bw.WriteString(`,"run_queue":[`)
	// The queue may change between pages. A lorry handed out or moved to
	// the bottom meanwhile comes round again at the end, and is not
	// written twice; one moved to the top meanwhile is missed.
	written := map[string]bool{}
	for {
		for _, l := range page {
			if written[l.Path] {
				continue
			}
			if len(written) > 0 {
				bw.WriteByte(',')
			}
			written[l.Path] = true
			buf.Reset()
			if err := enc.Encode(lorryWire(l)); err != nil {
				return err
			}
			if _, err := bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))); err != nil {
				return nil // the client went away
			}
		}
		if len(page) < statusPage {
			break
		}
		after := page[len(page)-1].QueuePos
		page, err = s.LorriesAfter(ctx, after, statusPage)
		if err != nil {
			// Too late for an error answer: the client sees a cut body.
			s.Log.Error("status", "err", err)
			return nil
		}
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

func isEmpty(s string) bool { return s == "" }

func (s *Server) healthCheck(w http.ResponseWriter, r *http.Request) error {
	if err := s.Ping(r.Context()); err != nil {
		s.Log.Error("health check", "err", err)
		return errorf(http.StatusServiceUnavailable, "state database does not answer")
	}
	// A database that answers reads but takes no writes (a full disk)
	// gives no jobs and loses their output: that is no health.
	if err := s.CheckWrites(r.Context()); err != nil {
		s.Log.Error("health check", "err", err)
		return errorf(http.StatusServiceUnavailable, "state database does not take writes")
	}
	return ok(w, map[string]bool{"ok": true})
}

// WriteStatusPage writes the on-disk copy of the status page, as
// status-html does, for the periodic work.
func (s *Server) WriteStatusPage(ctx context.Context) error {
	_, disk, err := s.readStatusViews(ctx, statedb.LorryFilter{}, 1)
	if err != nil {
		return err
	}
	return s.writeStatusCopy(disk)
}
