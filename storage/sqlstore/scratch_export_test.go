package sqlstore

func ScratchVariant(st *Store, reads string, writes bool) {
	s := st.s
	if s.stmts != nil {
		_ = s.stmts.close()
		s.stmts = nil
	}
	switch reads {
	case "rewrite":
		s.stmts = newStmtCache(s.r.DB, sqliteReadCols)
	case "plain":
		s.stmts = newStmtCache(s.r.DB, nil)
	}
	if s.wstmts != nil {
		_ = s.wstmts.close()
		s.wstmts = nil
	}
	if writes {
		s.wstmts = newStmtCache(s.w.DB, nil)
	}
}
