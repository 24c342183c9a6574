package routes

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"lorrycontroller/statedb"
	"lorrycontroller/templates"
)

// lowDiskBytes is the free space under which status warns.
const lowDiskBytes = 1 << 30

// statusJSON is the answer to status.
type statusJSON struct {
	RunningQueue bool                `json:"running_queue"`
	MaxJobs      *int64              `json:"max_jobs"`
	RunQueue     []lorryJSON         `json:"run_queue"`
	Hosts        []hostJSON          `json:"hosts"`
	RunningJobs  []int64             `json:"running_jobs"`
	Minions      []minionJSON        `json:"minions"`
	Config       statedb.ConfigState `json:"configuration"`
	Timestamp    int64               `json:"timestamp"`
	DiskFree     int64               `json:"disk_free"`
	WarningMsg   string              `json:"warning_msg"`
}

func (s *Server) collectStatus(ctx context.Context) (statusJSON, error) {
	var st statusJSON
	err := s.DB.View(ctx, func(tx *statedb.Tx) error {
		var err error
		st.Timestamp = tx.Now
		if st.RunningQueue, err = tx.RunningQueue(ctx); err != nil {
			return err
		}
		if st.MaxJobs, err = tx.MaxJobs(ctx); err != nil {
			return err
		}
		lorries, err := tx.Lorries(ctx)
		if err != nil {
			return err
		}
		st.RunQueue = make([]lorryJSON, len(lorries))
		for i, l := range lorries {
			st.RunQueue[i] = lorryWire(l)
		}
		hosts, err := tx.Hosts(ctx)
		if err != nil {
			return err
		}
		st.Hosts = make([]hostJSON, len(hosts))
		for i, h := range hosts {
			st.Hosts[i] = hostWire(h)
		}
		if st.RunningJobs, err = tx.RunningJobIDs(ctx); err != nil {
			return err
		}
		minions, err := tx.Minions(ctx)
		if err != nil {
			return err
		}
		st.Minions = make([]minionJSON, len(minions))
		for i, m := range minions {
			st.Minions[i] = minionWire(m)
		}
		st.Config, err = tx.ConfigState(ctx)
		return err
	})
	if err != nil {
		return st, err
	}
	st.DiskFree = diskFree(filepath.Dir(s.DB.Path()))
	switch {
	case st.DiskFree >= 0 && st.DiskFree < lowDiskBytes:
		st.WarningMsg = fmt.Sprintf("only %d bytes free on the state database's disk", st.DiskFree)
	case st.Config.Failure != "" && st.Config.FailAt >= st.Config.ReadAt:
		st.WarningMsg = "last read-configuration failed: " + st.Config.Failure
	}
	return st, nil
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

func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	st, err := s.collectStatus(r.Context())
	if err != nil {
		return err
	}
	return ok(w, st)
}

func (s *Server) statusHTML(w http.ResponseWriter, r *http.Request) error {
	page, err := s.RenderStatus(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err = w.Write(page)
	return err
}

// RenderStatus renders the status page and, if StatusHTML is set, replaces
// the on-disk copy with it atomically.
func (s *Server) RenderStatus(ctx context.Context) ([]byte, error) {
	st, err := s.collectStatus(ctx)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := templates.Pages.ExecuteTemplate(&buf, "status.html", st); err != nil {
		return nil, fmt.Errorf("render status: %w", err)
	}
	if s.StatusHTML != "" {
		if err := writeFileAtomic(s.StatusHTML, buf.Bytes()); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// writeFileAtomic replaces path with data so that readers see either the
// old file or the new one, never a part.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func (s *Server) healthCheck(w http.ResponseWriter, r *http.Request) error {
	if err := s.DB.Ping(r.Context()); err != nil {
		s.Log.Error("health check", "err", err)
		return errorf(http.StatusServiceUnavailable, "state database does not answer")
	}
	return ok(w, map[string]bool{"ok": true})
}
