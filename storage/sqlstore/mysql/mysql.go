// Package mysql registers MySQL 8 and MariaDB 10.6+ with sqlstore.Open,
// through go-sql-driver/mysql; import it for its effect. It handles the
// scheme "mysql" ("mysql://user:pass@host:port/db?param=value", port 3306
// by default, parameters as go-sql-driver/mysql reads them) and that
// driver's own form, "user:pass@tcp(host:3306)/db". The store always sets
// parseTime, loc=UTC and clientFoundRows.
//
// The database in the DSN holds the store's tables: to keep them apart
// from the host's, give Parley a database of its own on the same server
// (MySQL's schemas are databases); queries can still join across them.
package mysql

import (
	"database/sql"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/schema"

	"github.com/parleychat/parley/storage/sqlstore"
)

func init() { sqlstore.Register("mysql", driver{}) }

type driver struct{}

func (driver) Dialect() schema.Dialect { return mysqldialect.New() }

// Code returns the error number of a server error, and 2013
// (CR_SERVER_LOST) for a connection the driver found broken.
func (driver) Code(err error) string {
	var e *gomysql.MySQLError
	if errors.As(err, &e) {
		return strconv.Itoa(int(e.Number))
	}
	if errors.Is(err, gomysql.ErrInvalidConn) {
		return "2013"
	}
	return ""
}

func (driver) Open(dsn string, o sqlstore.Options) (w, r *sql.DB, err error) {
	cfg, err := config(dsn)
	if err != nil {
		return nil, nil, err
	}
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	db := o.SizePool(sql.OpenDB(connector), 16)
	db.SetConnMaxLifetime(time.Hour)
	return db, nil, nil
}

// config converts a "mysql://" URL, or parses a go-sql-driver DSN, into a
// driver configuration with the settings the store relies on: times parsed
// as UTC, and "rows affected" counting matched rows.
func config(dsn string) (*gomysql.Config, error) {
	var cfg *gomysql.Config
	if strings.HasPrefix(dsn, "mysql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, err
		}
		cfg, err = gomysql.ParseDSN("/?" + u.RawQuery)
		if err != nil {
			return nil, err
		}
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net = "tcp"
		cfg.Addr = u.Host
		if u.Port() == "" {
			cfg.Addr = u.Hostname() + ":3306"
		}
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
	} else {
		var err error
		if cfg, err = gomysql.ParseDSN(dsn); err != nil {
			return nil, err
		}
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.ClientFoundRows = true
	return cfg, nil
}
