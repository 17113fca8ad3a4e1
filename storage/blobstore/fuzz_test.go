package blobstore_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"testing"
	"time"

	blobdriver "gocloud.dev/blob/driver"
	"gocloud.dev/blob/fileblob"
)

// FuzzSignedURL: the parameters of a signed URL of a directory bucket
// (what a host checks with KeyFromURL before it serves a file) are
// accepted only as they were signed: a mutated URL either fails or names
// the same object, expiry and method.
func FuzzSignedURL(f *testing.F) {
	ctx := context.Background()
	base, _ := url.Parse("https://files.example.com/signed")
	// A secret of this run: URLs signed in another run (in the corpus)
	// are not this run's.
	signer := fileblob.NewURLSignerHMAC(base, []byte(rand.Text()))
	signed := map[string]url.Values{}
	for _, key := range []string{"attachments/ins_a/att_1", "attachments/ins_a/att_2", "orphans/x"} {
		u, err := signer.URLFromKey(ctx, key, &blobdriver.SignedURLOptions{Expiry: time.Hour, Method: "GET"})
		if err != nil {
			f.Fatal(err)
		}
		signed[key] = u.Query()
		f.Add(u.String())
	}
	f.Add("https://files.example.com/signed?obj=attachments%2Fins_a%2Fatt_1&expiry=99999999999&method=GET&signature=x")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		key, err := signer.KeyFromURL(ctx, u)
		if err != nil {
			return
		}
		want, ok := signed[key]
		q := u.Query()
		if !ok || q.Get("obj") != want.Get("obj") || q.Get("expiry") != want.Get("expiry") || q.Get("method") != want.Get("method") {
			t.Fatalf("a URL that was not signed is accepted: %s (key %q)", raw, key)
		}
	})
}
