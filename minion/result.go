package minion

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
)

// lorryResult is the file in which lorry says what a job's run found
// (lorry --result-file), so that the final update can pass it on.
type lorryResult struct {
	path string
}

// newLorryResult names the result file of job j: in the working area,
// after the job, with a leading "." so that it is never the directory of
// a lorry (those names never start with one). A file left by an earlier
// minion that died is removed.
func (m *Minion) newLorryResult(j *job) lorryResult {
	r := lorryResult{path: filepath.Join(m.cfg.WorkingArea, ".job-"+strconv.FormatInt(j.ID, 10)+"-result.json")}
	r.remove()
	return r
}

func (r lorryResult) remove() { os.Remove(r.path) }

// maxRefsBytes bounds the ref changes sent with a final update, as the
// WEBAPP bounds them; lorry bounds their number, so only refs of very long
// names reach it, and those are dropped rather than refused.
const maxRefsBytes = 2 << 20

// read reads what lorry found for the final update of job j: the branch
// that the upstream's HEAD named, and the refs the run changed, as JSON,
// when the job succeeded and lorry named them; the error class lorry gave
// its failure, when it failed. A lorry that wrote no file, or a file that
// cannot be read, is logged and means none of them, never a failed job.
func (r lorryResult) read(log *slog.Logger, j *job, exit int) (head, refs, class string) {
	data, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		log.Info("lorry wrote no result file", "result_file", r.path)
		return "", "", ""
	}
	var res struct {
		Lorries map[string]struct {
			OK         bool        `json:"ok"`
			Head       string      `json:"head"`
			Refs       *refChanges `json:"refs"`
			ErrorClass string      `json:"error_class"`
		} `json:"lorries"`
	}
	if err == nil {
		err = json.Unmarshal(data, &res)
	}
	if err != nil {
		log.Warn("cannot read lorry's result file", "result_file", r.path, "err", err)
		return "", "", ""
	}
	// The WEBAPP names the spec after the lorry's path; a spec named
	// otherwise is still the job's only one.
	spec, ok := res.Lorries[j.Path]
	if !ok && len(res.Lorries) == 1 {
		for _, s := range res.Lorries {
			spec = s
		}
	}
	if exit != 0 {
		return "", "", spec.ErrorClass
	}
	if !spec.OK {
		return "", "", ""
	}
	if spec.Refs != nil {
		// Re-encoded from the shape the WEBAPP takes, so that fields it
		// does not know are not sent.
		data, err := json.Marshal(spec.Refs)
		switch {
		case err != nil:
			log.Warn("cannot encode lorry's ref changes", "err", err)
		case len(data) > maxRefsBytes:
			log.Warn("lorry's ref changes are too large to report", "bytes", len(data), "max_bytes", maxRefsBytes)
		default:
			refs = string(data)
		}
	}
	return spec.Head, refs, ""
}

// refChanges are the refs a run changed, as lorry's result file and the
// WEBAPP's refs parameter hold them.
type refChanges struct {
	Created   []refChange `json:"created"`
	Updated   []refChange `json:"updated"`
	Deleted   []refChange `json:"deleted"`
	Truncated bool        `json:"truncated,omitempty"`
}

type refChange struct {
	Ref string `json:"ref"`
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}
