// Package claim is the format of the object by which a Parley database
// claims a bucket (attachments.ClaimKey): package attachments writes and
// checks it, and storage/storecopy checks and copies it. Neither declares
// the format again.
package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/parleychat/parley/messaging/driver"
)

// Key is the key of the claim object in a bucket; attachments.ClaimKey
// exports it.
const Key = "parley-claim.json"

// Doc is the content of the claim object.
type Doc struct {
	Note         string    `json:"note"`            // Note, for whoever finds the object
	Installation string    `json:"installation_id"` // the installation id of the database that owns the bucket
	Epoch        int64     `json:"epoch"`           // that database's reconcile epoch when it last wrote the claim
	ClaimedAt    time.Time `json:"claimed_at"`      // when it last wrote the claim
}

// Note is what Doc.Note says.
const Note = "This bucket holds the files of the Parley database named by installation_id. " +
	"Parley refuses to use it with any other database. Do not edit or delete this object."

// MaxBytes bounds the claim object Load reads.
const MaxBytes = 64 << 10

// ErrMalformed is matched (errors.Is) by the error of Load for an object
// that is not a claim: not JSON, or without an installation id.
var ErrMalformed = errors.New("not a claim")

// Opener is the part of a blob store that Load uses (an
// attachments.BlobStore has it).
type Opener interface {
	Open(ctx context.Context, key string) (io.ReadSeekCloser, error)
}

// Load reads the claim object of b: the document and its bytes, with found
// true; found is false, with no error, when b has no claim (its Open fails
// with messaging.ErrNotFound). Errors: b's, as they are, or an error that
// matches ErrMalformed (and wraps the JSON error, if any).
func Load(ctx context.Context, b Opener) (d Doc, data []byte, found bool, err error) {
	r, err := b.Open(ctx, Key)
	if errors.Is(err, driver.ErrNotFound) {
		return Doc{}, nil, false, nil
	}
	if err != nil {
		return Doc{}, nil, false, err
	}
	defer r.Close()
	data, err = io.ReadAll(io.LimitReader(r, MaxBytes))
	if err != nil {
		return Doc{}, nil, false, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return Doc{}, nil, false, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if d.Installation == "" {
		return Doc{}, nil, false, fmt.Errorf("%w: no installation_id", ErrMalformed)
	}
	return d, data, true, nil
}

// ValidInstallationID reports whether id can be an installation id: 1 to
// 64 ASCII letters, digits, '_' or '-', which a key prefix may hold (no
// '/' or '.'). The stores make "ins_" and lower-case hex or base32, and
// storage/storecopy's copies "ins_", hex, '_' and base32; a backend may
// make others. Package attachments refuses to serve a store whose id is
// not one, and storage/storecopy copies no source whose id is not one and
// takes a key under the prefix of one only.
func ValidInstallationID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Marshal returns the bytes of the claim object of d: indented JSON with
// a final newline.
func (d Doc) Marshal() ([]byte, error) {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
