//go:build !linux && !darwin

package review

import (
	"io/fs"
	"time"
)

func changeTime(fi fs.FileInfo) time.Time { return fi.ModTime() }
