package statedb

import (
	"context"
	"fmt"
	"strings"
)

// DefaultOutputLimit is how much output a job keeps unless Options say
// otherwise: the first half and the last half of it, with the cut marked.
const DefaultOutputLimit = 8 << 20

// lastErrorBytes is how much of a failed job's output tail becomes its
// lorry's last_run_error.
const lastErrorBytes = 2048

// appendOutput stores data after j's output. The first half of the cap is
// the head and is kept for good; after that, data goes to the tail, whose
// oldest chunks are dropped whenever it grows past the other half.
func (tx *Tx) appendOutput(ctx context.Context, j *Job, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	j.OutputBytes += int64(len(data))
	headCap := tx.outputLimit / 2
	tailCap := tx.outputLimit - headCap
	if j.headBytes < headCap {
		n := min(int64(len(data)), headCap-j.headBytes)
		if err := tx.insertChunk(ctx, j, false, data[:n]); err != nil {
			return err
		}
		j.headBytes += n
		data = data[n:]
		if len(data) == 0 {
			return nil
		}
	}
	if int64(len(data)) >= tailCap {
		j.CutBytes += j.tailBytes + int64(len(data)) - tailCap
		data = data[int64(len(data))-tailCap:]
		if _, err := tx.exec(ctx, `DELETE FROM job_output WHERE job_id = ? AND tail = 1`, j.ID); err != nil {
			return fmt.Errorf("trim output of job %d: %w", j.ID, err)
		}
		j.tailBytes = 0
	}
	if err := tx.insertChunk(ctx, j, true, data); err != nil {
		return err
	}
	j.tailBytes += int64(len(data))
	for j.tailBytes > tailCap {
		var seq, n int64
		err := tx.queryRow(ctx, `SELECT seq, length(data) FROM job_output
			WHERE job_id = ? AND tail = 1 ORDER BY seq LIMIT 1`, j.ID).Scan(&seq, &n)
		if err != nil {
			return fmt.Errorf("trim output of job %d: %w", j.ID, err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM job_output WHERE job_id = ? AND seq = ?`, j.ID, seq); err != nil {
			return fmt.Errorf("trim output of job %d: %w", j.ID, err)
		}
		j.tailBytes -= n
		j.CutBytes += n
	}
	return nil
}

func (tx *Tx) insertChunk(ctx context.Context, j *Job, tail bool, data []byte) error {
	_, err := tx.exec(ctx, `INSERT INTO job_output (job_id, seq, tail, data) VALUES (?, ?, ?, ?)`,
		j.ID, j.nextChunk, tail, data)
	if err != nil {
		return fmt.Errorf("append output of job %d: %w", j.ID, err)
	}
	j.nextChunk++
	return nil
}

// Output returns what job id has printed, with a marker where the middle
// was cut to keep under the cap.
func (tx *Tx) Output(ctx context.Context, id int64) (string, error) {
	j, err := tx.Job(ctx, id)
	if err != nil {
		return "", err
	}
	rows, err := tx.query(ctx, `SELECT tail, data FROM job_output WHERE job_id = ? ORDER BY seq`, id)
	if err != nil {
		return "", fmt.Errorf("read output of job %d: %w", id, err)
	}
	defer rows.Close()
	var b strings.Builder
	b.Grow(int(j.headBytes + j.tailBytes + 64))
	marked := false
	for rows.Next() {
		var tail bool
		var data []byte
		if err := rows.Scan(&tail, &data); err != nil {
			return "", fmt.Errorf("read output of job %d: %w", id, err)
		}
		if tail && !marked && j.CutBytes > 0 {
			fmt.Fprintf(&b, "\n[... %d bytes of output cut ...]\n", j.CutBytes)
			marked = true
		}
		b.Write(data)
	}
	return b.String(), rows.Err()
}

// outputTail returns about the last n bytes of job id's output.
func (tx *Tx) outputTail(ctx context.Context, id int64, n int) ([]byte, error) {
	rows, err := tx.query(ctx, `SELECT data FROM job_output WHERE job_id = ? ORDER BY seq DESC`, id)
	if err != nil {
		return nil, fmt.Errorf("read output of job %d: %w", id, err)
	}
	defer rows.Close()
	var chunks [][]byte
	total := 0
	for total < n && rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, err
		}
		chunks = append(chunks, data)
		total += len(data)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]byte, 0, total)
	for i := len(chunks) - 1; i >= 0; i-- {
		out = append(out, chunks[i]...)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return []byte(strings.ToValidUTF8(strings.TrimSpace(string(out)), "\uFFFD")), nil
}
