package cli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/launchenv"
	"github.com/corral-dev/corral/core/project"
)

// TestLaunchEnvExportedButEmpty: env_from_host copies a host variable that
// is exported but empty (core/launchenv's rule); only an unset one refuses
// the session. The factory's environment seam must keep "set" apart from
// "empty" for that.
func TestLaunchEnvExportedButEmpty(t *testing.T) {
	host := map[string]string{"EMPTY_VAR": ""}
	e := setup(t, "")
	f, _, _ := testFactory(e, false)
	f.LookupEnv = func(n string) (string, bool) { v, ok := host[n]; return v, ok }
	full := config.NetworkFull
	r := boxmeta.Resolved{Project: project.Project{Dir: e.proj, Box: e.box}}
	r.Loaded.Config = config.Config{Network: &full, EnvFromHost: map[string]string{"IN_BOX": "EMPTY_VAR"}}

	env, names, err := assemble(f, r)
	if err != nil {
		t.Fatalf("exported but empty refused: %v", err)
	}
	if !slices.Contains(env, "CORRAL_FWD_IN_BOX=") || !slices.Contains(names, "IN_BOX") {
		t.Errorf("env %q names %q", env, names)
	}

	r.Loaded.Config.EnvFromHost = map[string]string{"IN_BOX": "UNSET_VAR"}
	if _, _, err := assemble(f, r); err == nil || !strings.Contains(err.Error(), "UNSET_VAR") {
		t.Errorf("unset host variable: %v", err)
	}
}

// assemble is what a session's environment is built from, in this
// command's environment seam (sessionHost, which core/box's Session and
// DoctorEnv read), assembled as core/box does.
func assemble(f *Factory, r boxmeta.Resolved) ([]string, []string, error) {
	sh, err := agent.Find(nil, "shell")
	if err != nil {
		return nil, nil, err
	}
	h := sessionHost(f, false)
	env, err := launchenv.Assemble(context.Background(), launchenv.Input{
		Settings: r.Loaded.Settings(), Agent: sh, Getenv: h.Getenv, Box: r.Project.Box, Project: r.Project.Dir, Secrets: h.Secrets,
	})
	if err != nil {
		return nil, nil, err
	}
	return env.SSHEnviron(), env.Names(), nil
}
