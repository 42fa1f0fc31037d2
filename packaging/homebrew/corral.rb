# Homebrew cask for Corral.app and the corral command.
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

  uninstall quit: "dev.corral.Corral"

  # Only `brew uninstall --zap corral` removes corral's state: ~/.corral holds every box's VM disk
  # (lima/), per-project trusted config and the audit logs. A plain uninstall keeps it.
  zap trash: [
    "~/.corral",
    "~/Library/Preferences/dev.corral.Corral.plist",
  ]
end
