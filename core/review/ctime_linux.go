package review

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime is the inode's change time: set by the host's kernel at every
// change of content or metadata, which the box cannot set (it sets
// modification times at will, and a box whose clock drifted writes its
// own).
func changeTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return fi.ModTime()
}
