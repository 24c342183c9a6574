package minion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/proc"
	"lorrycontroller.dev/lc/workarea"
)

// jobsDir is the directory of the working area that holds the files of the
// minions' jobs, one subdirectory per minion. workarea.Name never makes a
// name starting with '.', so no lorry's directory can be this one.
const jobsDir = ".jobs"

// leftoverWait bounds how long CleanUp waits for the processes it killed.
const leftoverWait = 30 * time.Second

// jobRecord is what the minion keeps on disk about the job it runs, so that
// after a crash it can kill what is left of the job (see CleanUp).
type jobRecord struct {
	JobID int64  `json:"job_id"`
	Path  string `json:"path"`
	Mark  string `json:"mark"` // proc.MarkVar=value, in every process of the job
	Pgid  int    `json:"pgid,omitempty"`
}

// jobDir is this minion's directory of job files. Minions on one machine
// share the working area, so each has its own.
func (m *Minion) jobDir() string {
	return filepath.Join(m.cfg.WorkingArea, jobsDir, workarea.Name(m.cfg.Name))
}

func (m *Minion) recordFile(id int64) string {
	return filepath.Join(m.jobDir(), strconv.FormatInt(id, 10)+".job")
}

// writeRecord saves r, replacing any earlier record of the job.
func (m *Minion) writeRecord(r jobRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeFile(m.recordFile(r.JobID), data, 0o644)
}

// writeSpec saves the job's lorry spec in the job directory for lorry to
// read, and returns its path. A spec may hold credentials (an upstream's
// clone token), so no other user may read it: it is the minion's alone,
// or with --job-user also readable by the job user's group, which the
// minion's user belongs to and lorry runs as.
func (m *Minion) writeSpec(j *job) (string, error) {
	name := filepath.Join(m.jobDir(), strconv.FormatInt(j.ID, 10)+".lorry")
	mode := os.FileMode(0o600)
	if m.cfg.JobUser != nil {
		mode = 0o640
	}
	if err := writeFile(name, []byte(j.Text), mode); err != nil {
		return "", fmt.Errorf("write spec of job %d: %w", j.ID, err)
	}
	if m.cfg.JobUser != nil {
		if err := os.Chown(name, -1, int(m.cfg.JobUser.GID)); err != nil {
			return "", fmt.Errorf("write spec of job %d: %w", j.ID, err)
		}
		// lorry, run as the job's user, reads the spec by its name;
		// it need not list the directories, nor read the records.
		for path, mode := range map[string]os.FileMode{
			filepath.Dir(m.jobDir()): 0o711, m.jobDir(): 0o711, name: 0o640,
		} {
			if err := os.Chmod(path, mode); err != nil {
				return "", fmt.Errorf("write spec of job %d: %w", j.ID, err)
			}
		}
	}
	return name, nil
}

// writeFile writes name through a temporary file, so that a crash never
// leaves half of it to be read.
func writeFile(name string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(name, data, mode)
}

// recordJob writes job j's record, with a new mark for its processes,
// before anything of the job runs, so that a minion that starts again
// after a crash finds them.
func (m *Minion) recordJob(j *job) (string, error) {
	mark, err := proc.NewMark()
	if err == nil {
		err = m.writeRecord(jobRecord{JobID: j.ID, Path: j.Path, Mark: mark})
	}
	return mark, err
}

// removeJobFiles forgets the files of job id once it has ended.
func (m *Minion) removeJobFiles(id int64) {
	base := filepath.Join(m.jobDir(), strconv.FormatInt(id, 10))
	for _, name := range []string{base + ".lorry", base + ".job"} {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.log.Warn("cannot remove job file", "file", name, "err", err)
		}
	}
}

// LockName takes this minion's name on this machine for as long as the
// minion lives: WORKING-AREA/.jobs/NAME.lock, held exclusively and never
// given to a job. It fails, wrapping flock.ErrLocked, while another
// minion of the same name runs. Take it before CleanUp, which must not
// kill the jobs of a live minion.
//
// The scraper working directory's lock cannot serve: the job inherits
// it, so that the directory outlives a minion killed outright for as
// long as the job does, and it would keep the next run of the minion
// from starting, and so from killing that job.
func (m *Minion) LockName() (*flock.Lock, error) {
	dir := filepath.Join(m.cfg.WorkingArea, jobsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock minion name: %w", err)
	}
	l, err := flock.TryExclusive(filepath.Join(dir, workarea.Name(m.cfg.Name)+".lock"))
	if err != nil {
		return nil, fmt.Errorf("minion name %s: %w", m.cfg.Name, err)
	}
	return l, nil
}

// CleanUp kills whatever is left of the jobs of an earlier run of this
// minion and removes their files. Call it before the first job: a minion
// that was killed outright (kill -9, an out-of-memory kill) could not kill
// its job, and the job's processes would go on beside the next run of the
// same lorry. Under systemd the unit has killed them already.
//
// The WEBAPP ends such a job as lost when the minion first asks for work,
// saying that its processes were killed; so CleanUp returns only once they
// are gone, or fails.
func (m *Minion) CleanUp(ctx context.Context) error {
	dir := m.jobDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clean up jobs: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, leftoverWait)
	defer cancel()
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".job") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, fmt.Errorf("clean up jobs: %w", err))
			continue
		}
		var r jobRecord
		if err := json.Unmarshal(data, &r); err != nil || r.Mark == "" {
			// Never written whole: writeRecord renames into place.
			m.log.Warn("unreadable job record; ignored", "file", e.Name(), "err", err)
			continue
		}
		pids, err := proc.KillMarked(ctx, r.Mark, m.cfg.JobUser)
		if err != nil {
			errs = append(errs, fmt.Errorf("kill what is left of job %d: %w", r.JobID, err))
			continue
		}
		if len(pids) > 0 {
			m.log.Warn("killed what was left of a job of an earlier run", "job_id", r.JobID, "path", r.Path, "pgid", r.Pgid, "pids", pids)
		}
	}
	if err := errors.Join(errs...); err != nil {
		// Keep the records, so that the next start tries again.
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clean up jobs: %w", err)
	}
	return nil
}
