package gcs

import (
	"os"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"

	"github.com/parleychat/parley/storage/blobstore/internal/drivers"
)

func init() { drivers.RegisterPutSigner(signPut) }

// signPut signs the type and the disposition into a PUT URL (V4): Cloud
// Storage then refuses a request without them, and the object is stored
// with both, as every object is. It checks no SHA-256. It also signs
// x-goog-if-generation-match: 0, a precondition that the object does not
// exist: the URL creates the object and cannot overwrite it, so that a
// client cannot replace a file the server has checked while the URL lasts;
// and x-goog-content-length-range of the size, exactly, so that Cloud
// Storage refuses a request of any other size (400) and a client cannot
// store more than it said. A browser sends these headers too: the bucket's
// CORS rule must allow them.
// With STORAGE_EMULATOR_HOST set, the URL is of the emulator, as every
// other request of the client is.
func signPut(as func(any) bool, req drivers.PutRequest) (drivers.PutTerms, bool, error) {
	var o *storage.SignedURLOptions
	if !as(&o) {
		return drivers.PutTerms{}, false, nil
	}
	o.Scheme = storage.SigningSchemeV4
	o.ContentType = req.ContentType
	size := strconv.FormatInt(req.Size, 10) + "," + strconv.FormatInt(req.Size, 10)
	o.Headers = append(o.Headers, "Content-Disposition:"+req.ContentDisposition, ifAbsent+":0", sizeRange+":"+size)
	if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" {
		o.Insecure = !strings.HasPrefix(host, "https://")
		o.Hostname = strings.TrimPrefix(strings.TrimPrefix(host, "https://"), "http://")
	}
	return drivers.PutTerms{Headers: map[string]string{
		"Content-Type":        req.ContentType,
		"Content-Disposition": req.ContentDisposition,
		ifAbsent:              "0",
		sizeRange:             size,
	}}, true, nil
}

// ifAbsent is the header of a request precondition on the generation of
// the object: 0 for none, that is, no live object.
const ifAbsent = "x-goog-if-generation-match"

// sizeRange is the header of the sizes, "min,max" in bytes, a signed PUT
// may store.
const sizeRange = "x-goog-content-length-range"
