// Package drivers holds what blobstore knows of particular gocloud drivers
// beyond gocloud's portable API: how to sign a URL to which a client PUTs
// an object's bytes itself. A driver's package under storage/blobstore (s3, gcs,
// azure) registers its part from init; blobstore tries each in turn.
package drivers

import "sync"

// PutRequest is what a signed PUT URL lets a client store.
type PutRequest struct {
	ContentType        string // the object's type
	ContentDisposition string // stored with the object, where the driver can
	SHA256             []byte // the bytes' digest, 32 bytes
	Size               int64  // the number of bytes
}

// PutTerms are how a client uses a signed PUT URL.
type PutTerms struct {
	// Headers the client sends with the request, exactly.
	Headers map[string]string
	// ChecksumChecked reports whether the bucket refuses bytes whose
	// SHA-256 is not PutRequest.SHA256.
	ChecksumChecked bool
}

// A PutSigner prepares the signing of a PUT URL (blob.SignedURLOptions'
// BeforeSign: as converts to the driver's request type) and returns the
// terms; ok is false when it does not know the driver.
type PutSigner func(as func(any) bool, req PutRequest) (terms PutTerms, ok bool, err error)

var registry struct {
	sync.RWMutex
	put []PutSigner
}

// RegisterPutSigner adds s to the signers blobstore tries.
func RegisterPutSigner(s PutSigner) {
	registry.Lock()
	defer registry.Unlock()
	registry.put = append(registry.put, s)
}

// PutSigners returns the registered PutSigners.
func PutSigners() []PutSigner {
	registry.RLock()
	defer registry.RUnlock()
	return registry.put
}
