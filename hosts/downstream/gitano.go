package downstream

import (
	"context"
	"fmt"
	"log/slog"
)

// Gitano keeps mirrors in repositories of a Gitano server (a
// Trove), which it creates with Gitano's ssh command "create".
type Gitano struct {
	ssh   downstreamSSH
	log   *slog.Logger
	known knownPaths
}

// Prepare creates the repository of repo.Path, unless Gitano says it
// exists already, and returns its ssh URL.
func (g *Gitano) Prepare(ctx context.Context, repo Repo) (string, error) {
	if err := checkSSHPath(repo.Path); err != nil {
		return "", err
	}
	if g.known.has(repo.Path) {
		return g.ssh.pushURL(repo.Path), nil
	}
	_, err := g.ssh.run(ctx, "create", repo.Path)
	switch {
	case err == nil:
		g.log.Info("downstream repository created", "path", repo.Path)
	case sshAlreadyExists(err):
	default:
		return "", fmt.Errorf("create Gitano repository %s: %w", repo.Path, err)
	}
	g.known.add(repo.Path)
	return g.ssh.pushURL(repo.Path), nil
}

// Finish does nothing: the repository's HEAD is left as Gitano set it.
func (g *Gitano) Finish(context.Context, Repo) error { return nil }
