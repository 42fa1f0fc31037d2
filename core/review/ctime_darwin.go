package review

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime is the inode's change time: set by the host's kernel at every
// change of content or metadata, which the box cannot set.
func changeTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctimespec.Sec, st.Ctimespec.Nsec)
	}
	return fi.ModTime()
}
