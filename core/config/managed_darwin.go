//go:build darwin

package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// managedPrefs is where macOS writes a configuration profile's managed
// preferences for corral's bundle id (device scope; a user-scope profile
// goes under the user's name, checked first).
func managedPrefs() []string {
	dir := "/Library/Managed Preferences"
	var out []string
	if u := os.Getenv("USER"); u != "" {
		out = append(out, filepath.Join(dir, u, ManagedBundleID+".plist"))
	}
	return append(out, filepath.Join(dir, ManagedBundleID+".plist"))
}

// systemManaged is the policy in force on macOS: the configuration
// profile's managed preferences when there are any, else the managed file
// (ChooseManaged decides). The plist (binary, as macOS writes it) is
// converted to XML by plutil, and read by ParseManagedPlist.
func systemManaged() *Managed {
	var profile *Managed
	var profileErr error
	for _, p := range managedPrefs() {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := exec.CommandContext(ctx, "/usr/bin/plutil", "-convert", "xml1", "-o", "-", "--", p).Output()
		cancel()
		name := fmt.Sprintf("managed preferences %s (%s)", ManagedBundleID, p)
		if err != nil {
			profileErr = fmt.Errorf("%s: plutil: %w", name, err)
			break
		}
		profile, profileErr = ParseManagedPlist(name, out)
		break
	}
	file, fileErr := loadManagedFile()
	return ChooseManaged(profile, profileErr, file, fileErr)
}

// profileStamp changes when a managed preferences file does.
func profileStamp() string {
	s := ""
	for _, p := range managedPrefs() {
		if st, err := os.Stat(p); err == nil {
			s += fmt.Sprintf(":%s:%d:%d", p, st.Size(), st.ModTime().UnixNano())
		}
	}
	return s
}
