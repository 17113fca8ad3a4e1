package drivers

import "sync"

// A SignHook sets, on the request a bucket's driver is about to sign for a
// signed GET URL, the headers the server should answer with: contentType
// (empty for none) and disposition, a Content-Disposition. as converts to
// the driver's request type, as in blob.SignedURLOptions.BeforeSign. The
// hook reports whether it knew the driver.
type SignHook func(as func(any) bool, contentType, disposition string) bool

var signHooks struct {
	sync.RWMutex
	list []SignHook
}

// RegisterSignHook adds h to the hooks blobstore's SignedURL tries, in
// order, until one knows the bucket's driver. A package that supports a
// driver calls it from init, as storage/blobstore/s3 does.
func RegisterSignHook(h SignHook) {
	signHooks.Lock()
	defer signHooks.Unlock()
	signHooks.list = append(signHooks.list, h)
}

// SignHooks returns the hooks registered so far.
func SignHooks() []SignHook {
	signHooks.RLock()
	defer signHooks.RUnlock()
	return signHooks.list
}
