package attachments

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/parleychat/parley/internal/check"
	"github.com/parleychat/parley/internal/domain"
	"github.com/parleychat/parley/internal/preview"
	"github.com/parleychat/parley/messaging/driver"
)

// The sizes of the previews of images.
const (
	PreviewSmall = "small" // fits within 256 × 256 pixels
	PreviewLarge = "large" // fits within 1,024 × 1,024 pixels
)

// PreviewSizes are the sizes of the previews, small first.
var PreviewSizes = []string{PreviewSmall, PreviewLarge}

// previewBounds are the bounds of PreviewSizes, in their order.
var previewBounds = []int{preview.Small, preview.Large}

// previewSep separates an object's key from the size in its previews' keys.
const previewSep = ".preview-"

// PreviewKey returns the key of the preview of the given size of the
// object at key: beside it, key + ".preview-" + size. Reconcile counts a
// preview as part of its object (it is moved aside when no row names the
// object), deleting an attachment deletes its previews, and
// storage/storecopy copies them.
func PreviewKey(key, size string) string { return key + previewSep + size }

// objectOf returns the key of the object whose preview is at key, or key
// itself when key is not a preview's.
func objectOf(key string) string {
	for _, size := range PreviewSizes {
		if base, ok := strings.CutSuffix(key, previewSep+size); ok {
			return base
		}
	}
	return key
}

// Preview is a preview of an image attachment.
type Preview struct {
	// Size is PreviewSmall or PreviewLarge.
	Size string
	// Type is image/jpeg (for an opaque image) or image/png (for one with
	// transparency).
	Type string
	// Body reads the preview's bytes; the caller closes it.
	Body io.ReadSeekCloser
}

// Preview returns the preview of the given size of an image attachment
// (JPEG, PNG, GIF or WebP, as its ImageWidth says): the image scaled down
// to fit within 256 (PreviewSmall) or 1,024 (PreviewLarge) pixels, never
// up. The first request of an image decodes it once and stores both
// previews beside its object (PreviewKey); concurrent first requests of
// one image on one instance wait for that one decode, and at most
// Options.MaxPreviewDecodes images are decoded at once. Later requests
// read the stored preview.
//
// Errors: ErrInvalid (param size) for another size; ErrNotFound for an
// attachment the caller may not see, and for one that has no preview: not
// an image, an image of more pixels than Options.MaxImagePixels (refused
// from its header, before any decoding), or one whose data does not
// decode.
func (s *Service) Preview(ctx context.Context, caller driver.Contact, id, size string) (driver.Attachment, Preview, error) {
	a, p, err := s.preview(ctx, caller, id, size)
	return a, p, domain.Wrap("attachments.Preview "+strconv.Quote(id), err)
}

func (s *Service) preview(ctx context.Context, caller driver.Contact, id, size string) (driver.Attachment, Preview, error) {
	i := previewIndex(size)
	if i < 0 {
		return driver.Attachment{}, Preview{}, check.BadParam("size", "size must be small or large")
	}
	a, err := s.get(ctx, caller, id)
	if err != nil {
		return driver.Attachment{}, Preview{}, err
	}
	if a.ImageWidth <= 0 || a.ImageHeight <= 0 {
		return a, Preview{}, noPreview(id, "it is not an image")
	}
	if int64(a.ImageWidth)*int64(a.ImageHeight) > s.opts.MaxImagePixels {
		return a, Preview{}, noPreview(id, "the image is larger than previews are made for")
	}
	p := Preview{Size: size}
	r, err := s.blobs.Open(ctx, PreviewKey(a.Key, size))
	if err == nil {
		if p.Type, err = previewType(r); err == nil {
			p.Body = r
			return a, p, nil
		}
		_ = r.Close()
		return a, Preview{}, err
	}
	if !errors.Is(err, driver.ErrNotFound) {
		return a, Preview{}, err
	}
	made, err := s.makePreviews(ctx, a)
	if err != nil {
		return a, Preview{}, err
	}
	p.Type = made[i].Type
	p.Body = nopCloser{bytes.NewReader(made[i].Data)}
	return a, p, nil
}

func previewIndex(size string) int {
	for i, s := range PreviewSizes {
		if s == size {
			return i
		}
	}
	return -1
}

func noPreview(id, why string) error {
	return &driver.Error{Kind: driver.ErrNotFound, Message: "attachment " + id + " has no preview: " + why}
}

// previewType reads the type of the stored preview r from its first bytes
// and seeks r back to its start.
func previewType(r io.ReadSeeker) (string, error) {
	var head [16]byte
	n, err := io.ReadFull(r, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	typ := preview.Sniff(head[:n])
	if typ == "" {
		typ = "application/octet-stream"
	}
	return typ, nil
}

// makePreviews makes the previews of a's image, PreviewSizes in their
// order, and stores them beside its object. Concurrent calls for one
// object share one decode; the decode goes on when its callers leave (a
// later request finds it stored), within a deadline of its own.
func (s *Service) makePreviews(ctx context.Context, a driver.Attachment) ([]preview.Preview, error) {
	ch := s.thumbs.DoChan(a.Key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(s.opts.FinishTimeout, time.Minute))
		defer cancel()
		r, err := s.blobs.Open(ctx, a.Key)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		_, made, err := s.previewer.Make(ctx, r, previewBounds...)
		switch {
		case errors.Is(err, preview.ErrTooLarge):
			return nil, noPreview(a.ID, "the image is larger than previews are made for")
		case errors.Is(err, preview.ErrNotImage), errors.Is(err, preview.ErrCorrupt):
			s.opts.Logger.InfoContext(ctx, "attachments: an image does not decode; it has no preview", "key", a.Key, "err", err)
			return nil, noPreview(a.ID, "the image cannot be decoded")
		case err != nil:
			return nil, err
		}
		for i, size := range PreviewSizes {
			key := PreviewKey(a.Key, size)
			if err := s.blobs.Put(ctx, key, made[i].Type, bytes.NewReader(made[i].Data)); err != nil {
				// Served all the same; the next request makes it again.
				s.opts.Logger.WarnContext(ctx, "attachments: cannot store a preview", "key", key, "err", err)
			}
		}
		return made, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.([]preview.Preview), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// imageSize returns the size of the JPEG, PNG, GIF or WebP image stored at
// key, as its header says (an image beyond MaxImagePixels too); 0 × 0 when
// the object is no such image or its header cannot be read.
func (s *Service) imageSize(ctx context.Context, key string) (int, int) {
	r, err := s.blobs.Open(ctx, key)
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "attachments: cannot read an image's header", "key", key, "err", err)
		return 0, 0
	}
	defer r.Close()
	info, err := s.previewer.Inspect(r)
	if err != nil && !errors.Is(err, preview.ErrTooLarge) {
		return 0, 0
	}
	return info.Width, info.Height
}

// deleteObject deletes the object at key and its previews. It returns nil
// when none is left (errors matching ErrNotFound count as gone).
func (s *Service) deleteObject(ctx context.Context, key string) error {
	var first error
	for _, k := range []string{PreviewKey(key, PreviewSmall), PreviewKey(key, PreviewLarge), key} {
		if err := s.blobs.Delete(ctx, k); err != nil && !errors.Is(err, driver.ErrNotFound) && first == nil {
			first = err
		}
	}
	return first
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
