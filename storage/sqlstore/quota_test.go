package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleychat/parley/internal/backendtest"
	"github.com/parleychat/parley/storage/sqlstore"
)

// seedUploads inserts n attachments of uploaderID, of 1,000 bytes each,
// in one statement (n at most 100,000), and has the engine analyze them.
func seedUploads(tb testing.TB, s *sqlstore.Store, engine, uploaderID string, n int) {
	tb.Helper()
	digits := "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	num := "(a.d + 10*b.d + 100*c.d + 1000*d.d + 10000*e.d)"
	q := fmt.Sprintf(`INSERT INTO attachments (id, uploader_id, filename, file_type, file_size, sha256, blob_key, created_at)
		SELECT CONCAT('att_%[1]s_', %[2]s), ?, 'f.bin', 'application/octet-stream', 1000, '', CONCAT('attachments/bench/%[1]s/', %[2]s), ?
		FROM %[3]s AS a, %[3]s AS b, %[3]s AS c, %[3]s AS d, %[3]s AS e WHERE %[2]s < ?`, uploaderID, num, digits)
	_, err := s.DB().NewRaw(q, uploaderID, time.Now().UTC(), n).Exec(tb.Context())
	require.NoError(tb, err)
	analyze := map[string]string{"sqlite": "ANALYZE", "postgres": "VACUUM ANALYZE attachments", "mysql": "ANALYZE TABLE attachments"}[engine]
	_, err = s.DB().NewRaw(analyze).Exec(tb.Context())
	require.NoError(tb, err)
}

// TestUploadedBytesReadsTheIndex: UploadedBytes sums one uploader's sizes
// from the index (uploader_id, file_size) alone, on every engine: its
// cost grows with that uploader's files, never with the table's rows.
func TestUploadedBytesReadsTheIndex(t *testing.T) {
	for _, e := range backendtest.SQL(t) {
		t.Run(e.Name, func(t *testing.T) {
			s := e.Open(t)
			seedUploads(t, s, e.Name, "ctc_big", 20_000)
			seedUploads(t, s, e.Name, "ctc_few", 3)
			n, err := s.Driver().UploadedBytes(t.Context(), "ctc_big")
			require.NoError(t, err)
			assert.Equal(t, int64(20_000_000), n)
			n, err = s.Driver().UploadedBytes(t.Context(), "ctc_few")
			require.NoError(t, err)
			assert.Equal(t, int64(3000), n)

			var plan string
			switch e.Name {
			case "sqlite":
				var rows []struct {
					ID      int    `bun:"id"`
					Parent  int    `bun:"parent"`
					NotUsed int    `bun:"notused"`
					Detail  string `bun:"detail"`
				}
				require.NoError(t, s.DB().NewRaw("EXPLAIN QUERY PLAN "+sqlstore.UploadedBytesSQL, "ctc_few", "ctc_few").Scan(t.Context(), &rows))
				for _, r := range rows {
					plan += r.Detail + "\n"
				}
				assert.Contains(t, plan, "USING COVERING INDEX attachments_uploader_size (uploader_id=?)")
				assert.Contains(t, plan, "USING COVERING INDEX upload_reservations_uploader_size (uploader_id=?)")
			case "postgres":
				var lines []string
				require.NoError(t, s.DB().NewRaw("EXPLAIN "+sqlstore.UploadedBytesSQL, "ctc_few", "ctc_few").Scan(t.Context(), &lines))
				plan = strings.Join(lines, "\n")
				assert.Contains(t, plan, "Index Only Scan using attachments_uploader_size")
				assert.Contains(t, plan, "Index Only Scan using upload_reservations_uploader_size")
			case "mysql":
				var rows []map[string]any
				require.NoError(t, s.DB().NewRaw("EXPLAIN "+sqlstore.UploadedBytesSQL, "ctc_few", "ctc_few").Scan(t.Context(), &rows))
				for _, r := range rows {
					plan += fmt.Sprintf("table=%s key=%s type=%s Extra=%s\n", str(r["table"]), str(r["key"]), str(r["type"]), str(r["Extra"]))
					if str(r["table"]) == "" {
						continue // the sum of the two
					}
					assert.Contains(t, []string{"attachments_uploader_size", "upload_reservations_uploader_size"}, str(r["key"]))
					assert.Contains(t, str(r["Extra"]), "Using index")
				}
			}
			t.Logf("%s:\n%s", e.Name, plan)
		})
	}
}

// BenchmarkUploadedBytes measures UploadedBytes, the read an upload makes
// under a quota, for an uploader of 10 files and one of 100,000, in a
// table of 100,010:
//
//	go test ./storage/sqlstore -run '^$' -bench UploadedBytes
//
// PARLEY_BENCH_UPLOADS (default 100000, at most 100000) sets the large
// size.
func BenchmarkUploadedBytes(b *testing.B) {
	big := min(benchSize("PARLEY_BENCH_UPLOADS", 100_000), 100_000)
	for _, e := range backendtest.SQL(b) {
		b.Run(e.Name, func(b *testing.B) {
			s := e.Open(b)
			seedUploads(b, s, e.Name, "ctc_big", big)
			seedUploads(b, s, e.Name, "ctc_few", 10)
			for _, who := range []struct {
				name, id string
				files    int
			}{{"files=10", "ctc_few", 10}, {fmt.Sprintf("files=%d", big), "ctc_big", big}} {
				b.Run(who.name, func(b *testing.B) {
					for b.Loop() {
						n, err := s.Driver().UploadedBytes(b.Context(), who.id)
						if err != nil || n != int64(who.files)*1000 {
							b.Fatalf("UploadedBytes = %d, %v", n, err)
						}
					}
				})
			}
		})
	}
}
