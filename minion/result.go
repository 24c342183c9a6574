package minion

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"lorrycontroller.dev/lc/wire"
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

// read reads what lorry found for the final update of job j: the branch
// that the upstream's HEAD named, and the refs the run changed, when the
// job succeeded and lorry named them; the error class lorry gave
// its failure, when it failed. A lorry that wrote no file, or a file that
// cannot be read, is logged and means none of them, never a failed job.
func (r lorryResult) read(log *slog.Logger, j *job, exit int) (head string, refs *wire.RefChanges, class string) {
	data, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		log.Info("lorry wrote no result file", "result_file", r.path)
		return "", nil, ""
	}
	var res wire.ResultFile
	if err == nil {
		err = json.Unmarshal(data, &res)
	}
	if err != nil {
		log.Warn("cannot read lorry's result file", "result_file", r.path, "err", err)
		return "", nil, ""
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
		return "", nil, spec.ErrorClass
	}
	if !spec.OK {
		return "", nil, ""
	}
	if spec.Refs != nil {
		// lorry bounds their number, so only refs of very long names
		// make them larger than the WEBAPP takes; those are dropped
		// rather than refused. Fields the WEBAPP does not know were
		// dropped by decoding, so are not sent.
		data, err := json.Marshal(spec.Refs)
		switch {
		case err != nil:
			log.Warn("cannot encode lorry's ref changes", "err", err)
		case len(data) > wire.MaxRefsBytes:
			log.Warn("lorry's ref changes are too large to report", "bytes", len(data), "max_bytes", wire.MaxRefsBytes)
		default:
			refs = spec.Refs
		}
	}
	return spec.Head, refs, ""
}
