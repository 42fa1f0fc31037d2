# Homebrew cask for Corral.app and the corral command. Until a release publishes it to the tap
# corral-dev/tap (GitHub repository corral-dev/homebrew-tap: brew install --cask corral-dev/tap/corral),
# install it from a local tap: docs/PLATFORMS.md, "Install the cask".
# The release job sets version, sha256 and the download host (make dmg prints the sha256);
# example.test is a placeholder that never resolves.
cask "corral" do
  version "0.0.0" # set by release
  sha256 :no_check # set by release: sha256 of Corral-#{version}.dmg

  url "https://example.test/corral/releases/download/v#{version}/Corral-#{version}.dmg" # set by release
  name "Corral"
  desc "Run coding agents in a per-project Lima VM, with a menu-bar app"
  homepage "https://example.test/corral" # set by release

  depends_on formula: "lima"
  depends_on macos: ">= :ventura"

  app "Corral.app"
  # The bundle's executable is the corral CLI itself; link it onto PATH.
  binary "#{appdir}/Corral.app/Contents/MacOS/corral"

  # Homebrew runs these in a fixed order (quit, then script) before it removes the app and its binary:
  # the menu-bar app quits, then `corral stop --all` stops every box whose VM or broker runs, so no
  # VM or broker is left running from a removed binary. `brew upgrade` runs it too: boxes and brokers
  # start again from the new binary at the next `corral up`. A failure does not stop the uninstall.
  uninstall quit:   "dev.corral.Corral",
            script: {
              executable:   "#{appdir}/Corral.app/Contents/MacOS/corral",
              args:         ["stop", "--all"],
              must_succeed: false,
            }

  # Only `brew uninstall --zap corral` removes corral's state: ~/.corral holds every box's VM disk
  # (lima/), per-project trusted config and the audit logs. A plain uninstall keeps it. zap runs after
  # the uninstall above (boxes stopped); its own script stops, with Homebrew's limactl, any VM still
  # running under corral's Lima home before its disks are trashed (zap's script runs before trash).
  zap script: {
        executable:   "/bin/sh",
        args:         ["-c", 'export LIMA_HOME="$HOME/.corral/lima"; [ -d "$LIMA_HOME" ] || exit 0; ' \
                             'for d in "$LIMA_HOME"/*/; do [ -f "$d/lima.yaml" ] && "$0" stop --force "$(basename "$d")"; done; exit 0',
                       "#{HOMEBREW_PREFIX}/bin/limactl"],
        must_succeed: false,
      },
      trash:  [
        "~/.corral",
        "~/Library/Preferences/dev.corral.Corral.plist",
      ]
end
