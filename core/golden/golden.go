// Package golden is corral's golden images: the project-independent
// variant of a box's config (Variant), the image's name from its template
// (Name: one image per distinct template), building one (Images.Build:
// created, provisioned, its toolchains asked and recorded, stopped), and
// the images there are with the boxes cloned from them (Images.List,
// Images.Remove). Rendering the template is the lifecycle's (core/box
// Render); a box is cloned from the image by the lifecycle too.
package golden

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/progress"
	"github.com/corral-dev/corral/core/toolreg"
	"github.com/corral-dev/corral/guest"
)

// Prefix begins the Lima instance name of every golden image.
const Prefix = "golden-"

// Is reports whether a Lima instance name is a golden image's.
func Is(name string) bool { return strings.HasPrefix(name, Prefix) }

// Name is the golden instance for a project-independent template.
func Name(yaml []byte) string {
	sum := sha256.Sum256(yaml)
	return Prefix + hex.EncodeToString(sum[:])[:12]
}

// Variant is the golden variant of a box's resolved config: no network
// unless something must be installed, and nothing the guest applies at
// every boot. Rendered without the project (core/box Render with golden
// set), boxes that differ only in their project or in such settings share
// one image.
func Variant(r boxmeta.Resolved) (boxmeta.Resolved, error) {
	g := r
	st := g.Loaded.Settings()
	net := config.NetworkOffline
	officialClaude := st.Agent == "claude" && st.ClaudeInstall != config.ClaudeInstallNPM
	// An [agents.NAME] install step is the user's own script (pip, curl):
	// it gets the network. Built-in steps install from pinned tarballs.
	a, _, err := limayaml.AgentPins(st, r.Platform.Arch)
	if err != nil {
		return boxmeta.Resolved{}, err
	}
	definedInstall := !a.Builtin && a.Install != ""
	if len(st.Packages) > 0 || len(st.Toolchains) > 0 || officialClaude || definedInstall || st.Image == "" {
		// apt, toolchains and the agent's installer download once, here;
		// so do nftables, tmux and the rest of what corral's guest scripts
		// run, when a downloaded cloud image (no image key) lacks them
		// (guest/provision/05-require.sh).
		net = config.NetworkFull
	}
	c := g.Loaded.Config
	c.Network = &net
	// Sudo is granted or taken at every boot (guest/provision/41-sudo.sh),
	// so boxes that differ only in it share one golden image.
	c.Sudo = nil
	g.Loaded.Config = c
	return g, nil
}

// Golden is a golden image and the boxes cloned from it.
type Golden struct {
	Name   string   `json:"name"`
	Status string   `json:"status"`
	Boxes  []string `json:"boxes"`
}

// Images are the golden images of corral's Lima home.
type Images struct {
	Layout paths.Layout
	Lima   *lima.Client
	// What Build needs besides: where its progress lines go (nil
	// discards), its logger, the clock of the toolchains record, a script
	// run in the running image as its default user (ssh, the script on
	// stdin, at most limit bytes of stdout back), and how long its start
	// may take.
	Progress     io.Writer
	ProgressTTY  bool
	Logger       *slog.Logger
	Now          func() time.Time
	GuestScript  func(ctx context.Context, name, script string, limit int) ([]byte, error)
	StartTimeout time.Duration
}

// List lists golden images (Lima instances named golden-*) and the boxes
// whose metadata names each as its origin.
func (im Images) List(ctx context.Context) ([]Golden, error) {
	insts, err := im.Lima.List(ctx)
	if err != nil {
		return nil, err
	}
	metas, _ := boxmeta.List(im.Layout)
	var out []Golden
	for _, in := range insts {
		if !Is(in.Name) {
			continue
		}
		g := Golden{Name: in.Name, Status: string(in.Status)}
		for _, m := range metas {
			if m.Golden == in.Name {
				g.Boxes = append(g.Boxes, m.Name)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// Remove deletes a golden image. Boxes cloned from it keep working (a
// clone is a full copy); force is needed while boxes still name it.
func (im Images) Remove(ctx context.Context, name string, force bool) error {
	if !Is(name) {
		return fmt.Errorf("%q is not a golden image name (golden-<12 hex>)", name)
	}
	gs, err := im.List(ctx)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if g.Name == name && len(g.Boxes) > 0 && !force {
			return hint.New(fmt.Errorf("golden image %s is the origin of %v", name, g.Boxes), fmt.Sprintf("corral golden rm -f %s (the boxes keep working)", name))
		}
	}
	if err := im.Lima.Delete(ctx, name, true); err != nil {
		if errors.Is(err, lima.ErrNotFound) {
			return fmt.Errorf("no golden image %s", name)
		}
		return fmt.Errorf("removing golden image %s: %w", name, err)
	}
	return nil
}

// Build builds the golden image of a rendered golden template, once per
// distinct template (Name): created, started to finish provisioning, its
// provision steps checked (an image whose step failed is deleted, its
// boot log kept in the logs directory), its toolchains asked, then
// stopped. An image already stopped is ready; one left running or broken
// by an interrupted build is built again.
func (im Images) Build(ctx context.Context, yaml []byte) (string, error) {
	name := Name(yaml)
	inst, err := im.Lima.Get(ctx, name)
	if err == nil && inst.Status == lima.StatusStopped {
		return name, nil
	}
	if err == nil {
		// Running (or broken) golden: a previous build was interrupted.
		_ = im.Lima.Delete(ctx, name, true)
	} else if !errors.Is(err, lima.ErrNotFound) {
		return "", err
	}
	im.progress("building golden image %s (once per toolchain set)", name)
	tmpl := filepath.Join(im.Layout.RunDir(), name+".yaml")
	if err := atomicfile.WriteFile(tmpl, yaml, 0o600); err != nil {
		return "", err
	}
	defer os.Remove(tmpl)
	if err := im.Lima.Create(ctx, name, tmpl); err != nil {
		return "", fmt.Errorf("creating golden image %s: %w", name, err)
	}
	w := &progress.Writer{W: im.Progress, TTY: im.ProgressTTY}
	step := w.Start("building golden image " + name)
	fctx, cancel := context.WithCancel(ctx)
	go progress.Follow(fctx, lima.HostAgentLog(im.Layout.LimaHome(), name), step)
	err = im.Lima.Start(ctx, name, im.StartTimeout)
	cancel()
	step.End(err)
	if err != nil {
		_ = im.Lima.Delete(context.WithoutCancel(ctx), name, true)
		return "", fmt.Errorf("provisioning golden image %s: %w", name, err)
	}
	// Lima reports the image ready even when a provision step failed:
	// the guest's own record of each step decides whether it is kept.
	if err := im.checkProvision(ctx, name); err != nil {
		log := im.keepLog(name)
		_ = im.Lima.Delete(context.WithoutCancel(ctx), name, true)
		return "", refusal(name, err, log)
	}
	// Before it stops: the toolchains are asked in the running golden.
	im.recordToolchains(ctx, name)
	if err := im.Lima.Stop(ctx, name, false); err != nil {
		return "", fmt.Errorf("stopping golden image %s: %w", name, err)
	}
	return name, nil
}

// checkProvision reads the running golden's record of its provision steps
// (guest.ProvisionRecord) and says which step failed or left no record. A
// record that cannot be read is a failure too: nothing unconfirmed is kept.
func (im Images) checkProvision(ctx context.Context, name string) error {
	out, err := im.GuestScript(ctx, name, guest.ProvisionRecord(), maxRecord)
	if err != nil {
		return fmt.Errorf("reading the guest's record of its provision steps: %w", err)
	}
	return CheckProvision(out, ProvisionSteps())
}

// recordToolchains asks the running golden image's toolchains where they
// download from (guest.ToolchainRegistries, as the box user) and records
// the answer with the golden (core/toolreg): boxes cloned from it get it
// as their "toolchains" egress group. The output is hostile and parsed on
// the host. A failure is recorded as a note and never fails the build:
// the boxes then have no toolchains group.
func (im Images) recordToolchains(ctx context.Context, name string) {
	rec := toolreg.Record{}
	out, err := im.GuestScript(ctx, name, guest.ToolchainRegistries(), toolreg.MaxOutput+1)
	if err == nil {
		rec, err = toolreg.ParseBytes(out)
	}
	if err != nil {
		rec.Notes = append(rec.Notes, display.Text("asking the toolchains failed: "+err.Error(), 300))
	}
	rec.Golden, rec.Built = name, im.now()
	if err := toolreg.Write(im.Layout, rec); err != nil {
		im.logger().Warn("recording toolchain registries", "golden", name, "err", err)
		return
	}
	if entries := rec.Entries(); len(entries) > 0 {
		shown := make([]string, len(entries))
		for i, e := range entries {
			shown[i] = display.Authority(e, 0)
		}
		im.progress("golden image %s: its toolchains download from %s (the boxes' \"toolchains\" egress group)", name, strings.Join(shown, ", "))
	}
}

func (im Images) progress(format string, args ...any) {
	if im.Progress != nil {
		fmt.Fprintf(im.Progress, format+"\n", args...)
	}
}

func (im Images) now() time.Time {
	if im.Now != nil {
		return im.Now()
	}
	return time.Now()
}

func (im Images) logger() *slog.Logger {
	if im.Logger != nil {
		return im.Logger
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
