package azure

import (
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/parleychat/parley/storage/blobstore/internal/drivers"
)

func init() { drivers.RegisterPutSigner(signPut) }

// signPut: an Azure PUT URL (a SAS) has the create permission alone, not
// gocloud's create and write: it creates the blob and cannot overwrite it,
// so that a client cannot replace a file the server has checked while the
// URL lasts. The permissions cover no header. The client sends the blob
// type (a single Put Blob), the type and the disposition; Azure checks no
// SHA-256 and no size, and nothing makes the client send these headers:
// the caller checks what was stored (blobstore.Store.Stat; attachments'
// Complete deletes an object of another size, type or disposition).
func signPut(as func(any) bool, req drivers.PutRequest) (drivers.PutTerms, bool, error) {
	var perms *sas.BlobPermissions
	if !as(&perms) {
		return drivers.PutTerms{}, false, nil
	}
	*perms = sas.BlobPermissions{Create: true}
	return drivers.PutTerms{Headers: map[string]string{
		"x-ms-blob-type":                "BlockBlob",
		"Content-Type":                  req.ContentType,
		"x-ms-blob-content-disposition": req.ContentDisposition,
	}}, true, nil
}
