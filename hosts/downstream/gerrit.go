package downstream

import (
	"context"
	"fmt"
	"log/slog"
)

// Gerrit keeps mirrors in projects of a Gerrit server, which it
// creates with Gerrit's ssh command "gerrit create-project"
// (https://gerrit-review.googlesource.com/Documentation/cmd-create-project.html).
// The ssh user needs the Create Project capability.
type Gerrit struct {
	ssh   downstreamSSH
	log   *slog.Logger
	known knownPaths
}

// Prepare creates the project of repo.Path, unless Gerrit says it exists
// already, and returns its ssh URL.
func (g *Gerrit) Prepare(ctx context.Context, repo Repo) (string, error) {
	if err := checkSSHPath(repo.Path); err != nil {
		return "", err
	}
	if g.known.has(repo.Path) {
		return g.ssh.pushURL(repo.Path), nil
	}
	_, err := g.ssh.run(ctx, "gerrit", "create-project", repo.Path)
	switch {
	case err == nil:
		g.log.Info("downstream project created", "path", repo.Path)
	case sshAlreadyExists(err):
	default:
		return "", fmt.Errorf("create Gerrit project %s: %w", repo.Path, err)
	}
	g.known.add(repo.Path)
	return g.ssh.pushURL(repo.Path), nil
}

// Finish does nothing: lorry pushes the branches, and the project's HEAD
// is left as Gerrit set it.
func (g *Gerrit) Finish(context.Context, Repo) error { return nil }
