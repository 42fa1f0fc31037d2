package box

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/limayaml"
)

// ImageProbe is the answer to a HEAD request for one guest image.
type ImageProbe struct {
	Image  limayaml.Image
	Status int   // HTTP status; 0 when no answer
	Err    error // transport error
}

// OK reports whether the image can be downloaded.
func (p ImageProbe) OK() bool { return p.Err == nil && p.Status >= 200 && p.Status < 300 }

// imageProbeTimeout bounds each HEAD request of `corral doctor`.
const imageProbeTimeout = 10 * time.Second

// ProbeImages asks, with one HEAD request each, whether the images Lima
// would try can be downloaded. It stops at the first that can: Lima takes
// that one. This is a network call; doctor makes it for the user, tests
// point it at 127.0.0.1.
func ProbeImages(ctx context.Context, client *http.Client, ims []limayaml.Image) []ImageProbe {
	if client == nil {
		client = &http.Client{Timeout: imageProbeTimeout}
	}
	var out []ImageProbe
	for _, im := range ims {
		p := ImageProbe{Image: im}
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, im.Location, nil)
		if err == nil {
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				p.Status = resp.StatusCode
				_ = resp.Body.Close()
			}
		}
		p.Err = err
		out = append(out, p)
		if p.OK() {
			break
		}
	}
	return out
}

// imageCheck turns the probes into the "guest image" check: the pinned
// image answers (pass); an older pin has been removed upstream and the
// undated fallback answers (pass, saying the image is then not pinned by
// digest); nothing answers (fail). No probes: nothing to download.
func imageCheck(probes []ImageProbe) Check {
	const name = "guest image"
	if len(probes) == 0 {
		return pass(name, "the image key names a local image: nothing to download")
	}
	var gone []string
	for _, p := range probes {
		if p.OK() {
			detail := display.Text(p.Image.Location, 200)
			if p.Image.Digest != "" {
				detail += " (pinned by digest)"
			} else {
				detail += " (not pinned by digest)"
			}
			if len(gone) > 0 {
				detail += "; unavailable first: " + joinClean(gone)
			}
			return pass(name, detail)
		}
		gone = append(gone, probeReason(p))
	}
	return fail(name, "no image Lima would try can be downloaded: "+joinClean(gone),
		"check the network (a proxy in HTTPS_PROXY?), or set image in ~/.corral/config.toml to a Linux cloud image URL or file; an existing golden image keeps working")
}

func probeReason(p ImageProbe) string {
	loc := display.Text(p.Image.Location, 200)
	if p.Err != nil {
		return fmt.Sprintf("%s (%v)", loc, p.Err)
	}
	return fmt.Sprintf("%s (HTTP %d)", loc, p.Status)
}

func joinClean(s []string) string { return strings.Join(s, ", ") }
