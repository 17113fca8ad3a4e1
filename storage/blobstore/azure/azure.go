// Package azure registers gocloud's azureblob driver for azblob:// bucket
// URLs, for blobstore. Import it for its effect:
//
//	import _ "github.com/parleychat/parley/storage/blobstore/azure"
//
//	files, err := blobstore.Open(ctx, "azblob://my-container")
//
// The account and its key come from AZURE_STORAGE_ACCOUNT and
// AZURE_STORAGE_KEY (or a connection string, a SAS token, or Azure's
// default credentials; see gocloud.dev/blob/azureblob). For the Azurite
// emulator add protocol=http, domain=127.0.0.1:10000 and localemu=true to
// the URL.
//
// gocloud signs Azure URLs with the blob's permissions only, so a signed
// URL cannot name the file: Azure serves the object with the type and the
// disposition stored with it at upload (blobstore stores inline or
// attachment by its type, without the name), so that a file a browser
// could run is never shown inline from the bucket's origin. A direct
// upload's client sends these headers itself, which its SAS does not
// cover: attachments' Complete refuses and deletes an object stored with
// other ones.
package azure

import (
	_ "gocloud.dev/blob/azureblob" // azblob:// URLs
)
