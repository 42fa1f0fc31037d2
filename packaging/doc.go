// Package packaging holds the tests of corral's packaging: the macOS
// Info.plist, entitlements and Homebrew cask, the Linux desktop entries,
// `make install` and `make deb`, and the shell scripts under packaging/.
// The files it checks live beside it (macos/, homebrew/, deb/, linux/) and
// at the repository root (Info.plist, Makefile); it has no code of its own.
package packaging
