package blobstore

import "sync"

// A SignHook sets, on the request a bucket's driver is about to sign for
// SignedURL, the headers the server should answer with: contentType
// (empty for none) and disposition, a Content-Disposition. as converts to
// the driver's request type, as in blob.SignedURLOptions.BeforeSign. The
// hook reports whether it knew the driver.
type SignHook func(as func(any) bool, contentType, disposition string) bool

var hooks struct {
	sync.RWMutex
	list []SignHook
}

// RegisterSignHook adds h to the hooks SignedURL tries, in order, until
// one knows the bucket's driver. A package that supports a driver calls
// it from init, as storage/blobstore/s3 does.
func RegisterSignHook(h SignHook) {
	hooks.Lock()
	defer hooks.Unlock()
	hooks.list = append(hooks.list, h)
}

func signHooks() []SignHook {
	hooks.RLock()
	defer hooks.RUnlock()
	return hooks.list
}
