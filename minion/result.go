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

// head reads the branch that the upstream's HEAD named, for the final
// update of job j. It is "" unless the job succeeded and lorry named one:
// a lorry that wrote no file, or a file that cannot be read, is logged
// and means no head, never a failed job.
func (r lorryResult) head(log *slog.Logger, j *job, exit int) string {
	if exit != 0 {
		return ""
	}
	data, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		log.Info("lorry wrote no result file", "result_file", r.path)
		return ""
	}
	var res struct {
		Lorries map[string]struct {
			OK   bool   `json:"ok"`
			Head string `json:"head"`
		} `json:"lorries"`
	}
	if err == nil {
		err = json.Unmarshal(data, &res)
	}
	if err != nil {
		log.Warn("cannot read lorry's result file", "result_file", r.path, "err", err)
		return ""
	}
	// The WEBAPP names the spec after the lorry's path; a spec named
	// otherwise is still the job's only one.
	spec, ok := res.Lorries[j.Path]
	if !ok && len(res.Lorries) == 1 {
		for _, s := range res.Lorries {
			spec = s
		}
	}
	if !spec.OK {
		return ""
	}
	return spec.Head
}
