//! The two backends behind one query API: SQLite (embedded, the default) and PostgreSQL
//! (several daemons on one database).
//!
//! Not sqlx's `Any` driver: it copies every row into its own value type and knows fewer
//! types. Here a query is bound straight into the backend's own sqlx query (the backend is
//! known when the query is made, from the store or connection that makes it), and a row
//! is the backend's own row behind an enum, so the SQLite path costs what it cost before:
//! one `match` per call.
//!
//! Statements are written once with `$N` placeholders, which both backends read. Where the
//! dialects differ (JSON functions, `GREATEST`, `strpos`) the caller picks its text with
//! [`Backend::pick`].

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgConnection, PgPool, PgRow};
use sqlx::sqlite::{SqliteArguments, SqliteConnection, SqlitePool, SqliteRow};
use sqlx::{ColumnIndex, Connection, Decode, Encode, FromRow, Postgres, SqlSafeStr, Sqlite, Type};

/// Which database a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The statement text for this backend, where the two dialects differ.
    pub(super) fn pick(self, sqlite: &'static str, postgres: &'static str) -> &'static str {
        match self {
            Backend::Sqlite => sqlite,
            Backend::Postgres => postgres,
        }
    }
}

/// A statement with its arguments, bound for one backend.
pub(super) enum Query {
    Sqlite(sqlx::query::Query<'static, Sqlite, SqliteArguments>),
    Postgres(sqlx::query::Query<'static, Postgres, PgArguments>),
}

/// A row of either backend; read it with [`Row::try_get`].
pub(super) enum Row {
    Sqlite(SqliteRow),
    Postgres(PgRow),
}

/// What a statement that returns no rows did.
#[derive(Debug, Clone, Copy)]
pub(super) struct Done {
    rows_affected: u64,
}

impl Done {
    pub(super) fn rows_affected(&self) -> u64 {
        self.rows_affected
    }
}

/// One connection of either backend, borrowed for a statement or several.
pub(super) enum Conn<'c> {
    Sqlite(&'c mut SqliteConnection),
    Postgres(&'c mut PgConnection),
}

/// Where a statement runs: a pool (any free connection) or one connection.
pub(super) enum Exec<'e> {
    Pool(&'e Pool),
    Conn(Conn<'e>),
}

/// A pool of connections of either backend.
#[derive(Debug, Clone)]
pub(super) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// An owned connection of either backend.
#[derive(Debug)]
pub(super) enum Owned {
    Sqlite(SqliteConnection),
    Postgres(PgConnection),
}

/// A connection taken from a [`Pool`], given back when dropped.
pub(super) enum Pooled {
    Sqlite(PoolConnection<Sqlite>),
    Postgres(PoolConnection<Postgres>),
}

/// A transaction of either backend: rolled back when dropped without [`Tx::commit`].
pub(super) enum Tx<'c> {
    Sqlite(sqlx::Transaction<'c, Sqlite>),
    Postgres(sqlx::Transaction<'c, Postgres>),
}

/// Something statements can run on one connection of: the write connection, a pooled
/// connection, a transaction. Makes the statements too, for its backend.
pub(super) trait OnConn {
    fn conn(&mut self) -> Conn<'_>;
    fn backend(&self) -> Backend;

    fn query(&self, sql: impl SqlSafeStr) -> Query {
        Query::new(self.backend(), sql)
    }

    fn query_as<O>(&self, sql: impl SqlSafeStr) -> QueryAs<O>
    where
        O: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow>,
    {
        QueryAs::new(self.backend(), sql)
    }
}

impl OnConn for Owned {
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Owned::Sqlite(c) => Conn::Sqlite(c),
            Owned::Postgres(c) => Conn::Postgres(c),
        }
    }

    fn backend(&self) -> Backend {
        match self {
            Owned::Sqlite(_) => Backend::Sqlite,
            Owned::Postgres(_) => Backend::Postgres,
        }
    }
}

impl OnConn for Pooled {
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Pooled::Sqlite(c) => Conn::Sqlite(c),
            Pooled::Postgres(c) => Conn::Postgres(c),
        }
    }

    fn backend(&self) -> Backend {
        match self {
            Pooled::Sqlite(_) => Backend::Sqlite,
            Pooled::Postgres(_) => Backend::Postgres,
        }
    }
}

impl OnConn for Tx<'_> {
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Tx::Sqlite(t) => Conn::Sqlite(t),
            Tx::Postgres(t) => Conn::Postgres(t),
        }
    }

    fn backend(&self) -> Backend {
        match self {
            Tx::Sqlite(_) => Backend::Sqlite,
            Tx::Postgres(_) => Backend::Postgres,
        }
    }
}

impl OnConn for tokio::sync::MappedMutexGuard<'_, Owned> {
    fn conn(&mut self) -> Conn<'_> {
        (**self).conn()
    }

    fn backend(&self) -> Backend {
        (**self).backend()
    }
}

impl<'e, T: OnConn> From<&'e mut T> for Exec<'e> {
    fn from(on: &'e mut T) -> Exec<'e> {
        Exec::Conn(on.conn())
    }
}

impl<'e> From<&'e Pool> for Exec<'e> {
    fn from(pool: &'e Pool) -> Exec<'e> {
        Exec::Pool(pool)
    }
}

impl<'c> Conn<'c> {
    pub(super) async fn begin(self) -> Result<Tx<'c>, sqlx::Error> {
        Ok(match self {
            Conn::Sqlite(c) => Tx::Sqlite(c.begin().await?),
            Conn::Postgres(c) => Tx::Postgres(c.begin().await?),
        })
    }
}

impl Owned {
    pub(super) async fn close(self) -> Result<(), sqlx::Error> {
        match self {
            Owned::Sqlite(c) => c.close().await,
            Owned::Postgres(c) => c.close().await,
        }
    }
}

impl Pool {
    pub(super) fn backend(&self) -> Backend {
        match self {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    pub(super) async fn acquire(&self) -> Result<Pooled, sqlx::Error> {
        Ok(match self {
            Pool::Sqlite(p) => Pooled::Sqlite(p.acquire().await?),
            Pool::Postgres(p) => Pooled::Postgres(p.acquire().await?),
        })
    }

    pub(super) async fn begin(&self) -> Result<Tx<'static>, sqlx::Error> {
        Ok(match self {
            Pool::Sqlite(p) => Tx::Sqlite(p.begin().await?),
            Pool::Postgres(p) => Tx::Postgres(p.begin().await?),
        })
    }

    pub(super) async fn close(&self) {
        match self {
            Pool::Sqlite(p) => p.close().await,
            Pool::Postgres(p) => p.close().await,
        }
    }
}

impl Tx<'_> {
    pub(super) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(t) => t.commit().await,
            Tx::Postgres(t) => t.commit().await,
        }
    }
}

/// A statement made for one backend run on the other: a bug in the store, refused.
fn mismatch() -> sqlx::Error {
    sqlx::Error::Protocol("a statement made for one backend was run on the other".into())
}

/// Runs `$method` of the backend's query `$query` on `$exec`, mapping its result with
/// `$wrap` (a backend's result into the common one).
macro_rules! dispatch {
    ($query:expr, $exec:expr, $method:ident, |$out:ident| $wrap:expr, |$pg:ident| $pgwrap:expr) => {
        match ($query, $exec.into()) {
            (Query::Sqlite(q), Exec::Pool(Pool::Sqlite(p))) => {
                let $out = q.$method(p).await?;
                Ok($wrap)
            }
            (Query::Sqlite(q), Exec::Conn(Conn::Sqlite(c))) => {
                let $out = q.$method(c).await?;
                Ok($wrap)
            }
            (Query::Postgres(q), Exec::Pool(Pool::Postgres(p))) => {
                let $pg = q.$method(p).await?;
                Ok($pgwrap)
            }
            (Query::Postgres(q), Exec::Conn(Conn::Postgres(c))) => {
                let $pg = q.$method(c).await?;
                Ok($pgwrap)
            }
            _ => Err(mismatch()),
        }
    };
}

impl Query {
    pub(super) fn new(backend: Backend, sql: impl SqlSafeStr) -> Query {
        match backend {
            Backend::Sqlite => Query::Sqlite(sqlx::query(sql)),
            Backend::Postgres => Query::Postgres(sqlx::query(sql)),
        }
    }

    pub(super) fn bind<'t, T>(self, value: T) -> Query
    where
        T: Encode<'t, Sqlite> + Type<Sqlite> + Encode<'t, Postgres> + Type<Postgres>,
    {
        match self {
            Query::Sqlite(q) => Query::Sqlite(q.bind(value)),
            Query::Postgres(q) => Query::Postgres(q.bind(value)),
        }
    }

    pub(super) async fn execute<'e>(self, on: impl Into<Exec<'e>>) -> Result<Done, sqlx::Error> {
        dispatch!(
            self,
            on,
            execute,
            |r| Done {
                rows_affected: r.rows_affected()
            },
            |r| Done {
                rows_affected: r.rows_affected()
            }
        )
    }

    pub(super) async fn fetch_one<'e>(self, on: impl Into<Exec<'e>>) -> Result<Row, sqlx::Error> {
        dispatch!(self, on, fetch_one, |r| Row::Sqlite(r), |r| Row::Postgres(
            r
        ))
    }

    pub(super) async fn fetch_optional<'e>(
        self,
        on: impl Into<Exec<'e>>,
    ) -> Result<Option<Row>, sqlx::Error> {
        dispatch!(self, on, fetch_optional, |r| r.map(Row::Sqlite), |r| r
            .map(Row::Postgres))
    }

    pub(super) async fn fetch_all<'e>(
        self,
        on: impl Into<Exec<'e>>,
    ) -> Result<Vec<Row>, sqlx::Error> {
        dispatch!(
            self,
            on,
            fetch_all,
            |r| r.into_iter().map(Row::Sqlite).collect(),
            |r| r.into_iter().map(Row::Postgres).collect()
        )
    }
}

impl Row {
    /// Column `index` (a name or a position) as a `T` both backends can decode.
    pub(super) fn try_get<'r, T, I>(&'r self, index: I) -> Result<T, sqlx::Error>
    where
        T: Decode<'r, Sqlite> + Type<Sqlite> + Decode<'r, Postgres> + Type<Postgres>,
        I: ColumnIndex<SqliteRow> + ColumnIndex<PgRow>,
    {
        match self {
            Row::Sqlite(r) => sqlx::Row::try_get(r, index),
            Row::Postgres(r) => sqlx::Row::try_get(r, index),
        }
    }

    fn to<O>(&self) -> Result<O, sqlx::Error>
    where
        O: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow>,
    {
        match self {
            Row::Sqlite(r) => O::from_row(r),
            Row::Postgres(r) => O::from_row(r),
        }
    }
}

/// A statement whose rows are read as `O` (a tuple, usually).
pub(super) struct QueryAs<O> {
    query: Query,
    out: std::marker::PhantomData<fn() -> O>,
}

impl<O> QueryAs<O>
where
    O: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow>,
{
    pub(super) fn new(backend: Backend, sql: impl SqlSafeStr) -> QueryAs<O> {
        QueryAs {
            query: Query::new(backend, sql),
            out: std::marker::PhantomData,
        }
    }

    pub(super) fn bind<'t, T>(self, value: T) -> QueryAs<O>
    where
        T: Encode<'t, Sqlite> + Type<Sqlite> + Encode<'t, Postgres> + Type<Postgres>,
    {
        QueryAs {
            query: self.query.bind(value),
            out: self.out,
        }
    }

    pub(super) async fn fetch_one<'e>(self, on: impl Into<Exec<'e>>) -> Result<O, sqlx::Error> {
        self.query.fetch_one(on).await?.to()
    }

    pub(super) async fn fetch_optional<'e>(
        self,
        on: impl Into<Exec<'e>>,
    ) -> Result<Option<O>, sqlx::Error> {
        self.query
            .fetch_optional(on)
            .await?
            .map(|r| r.to())
            .transpose()
    }

    pub(super) async fn fetch_all<'e>(
        self,
        on: impl Into<Exec<'e>>,
    ) -> Result<Vec<O>, sqlx::Error> {
        self.query
            .fetch_all(on)
            .await?
            .iter()
            .map(Row::to)
            .collect()
    }
}

/// What binds arguments in order: a [`Query`] or [`Statements`] (so one binder serves both).
pub(super) trait Bind: Sized {
    fn bind<'t, T>(self, value: T) -> Self
    where
        T: Encode<'t, Sqlite> + Type<Sqlite> + Encode<'t, Postgres> + Type<Postgres>;
}

impl Bind for Query {
    fn bind<'t, T>(self, value: T) -> Self
    where
        T: Encode<'t, Sqlite> + Type<Sqlite> + Encode<'t, Postgres> + Type<Postgres>,
    {
        Query::bind(self, value)
    }
}

/// Statements with plain `?` arguments sent as one: on SQLite one query text, one trip to
/// its connection's thread (sqlx numbers plain `?` across the statements of a query); on
/// PostgreSQL, which prepares one statement at a time, each in turn (its `?` numbered
/// `$1...`). Arguments are bound in order across the statements. With `transaction`, all
/// of them or none: inside `BEGIN IMMEDIATE ... COMMIT` on SQLite, a transaction on
/// PostgreSQL; without, each commits as it ends, as if written one after the other.
pub(super) enum Statements {
    Sqlite(Query),
    Postgres {
        /// Each statement with the number of arguments it takes.
        statements: Vec<(usize, Query)>,
        transaction: bool,
    },
}

impl Statements {
    pub(super) fn new(backend: Backend, texts: &[&'static str], transaction: bool) -> Statements {
        match backend {
            // One statement on its own (a timed save): its text as it is, nothing built.
            Backend::Sqlite if !transaction && texts.len() == 1 => {
                Statements::Sqlite(Query::new(backend, texts[0]))
            }
            Backend::Sqlite => {
                let mut sql =
                    String::with_capacity(texts.iter().map(|t| t.len() + 1).sum::<usize>() + 32);
                if transaction {
                    sql.push_str("BEGIN IMMEDIATE; ");
                }
                for text in texts {
                    sql.push_str(text);
                    sql.push(' ');
                }
                if transaction {
                    sql.push_str("COMMIT;");
                }
                Statements::Sqlite(Query::new(backend, sqlx::AssertSqlSafe(sql)))
            }
            Backend::Postgres => Statements::Postgres {
                statements: texts
                    .iter()
                    .map(|text| {
                        let (sql, n) = numbered(text);
                        (n, Query::new(backend, sqlx::AssertSqlSafe(sql)))
                    })
                    .collect(),
                transaction,
            },
        }
    }

    /// Runs the statements on `on`. On SQLite a failure inside the transaction may leave it
    /// open (the caller renews the connection); on PostgreSQL it is rolled back.
    pub(super) async fn execute(self, on: &mut impl OnConn) -> Result<(), sqlx::Error> {
        match (self, on.conn()) {
            (Statements::Sqlite(query), conn) => {
                query.execute(Exec::Conn(conn)).await?;
            }
            (
                Statements::Postgres {
                    statements,
                    transaction: true,
                },
                Conn::Postgres(conn),
            ) => {
                let mut tx = Tx::Postgres(conn.begin().await?);
                for (_, query) in statements {
                    query.execute(&mut tx).await?;
                }
                tx.commit().await?;
            }
            (Statements::Postgres { statements, .. }, Conn::Postgres(conn)) => {
                for (_, query) in statements {
                    query
                        .execute(Exec::Conn(Conn::Postgres(&mut *conn)))
                        .await?;
                }
            }
            (Statements::Postgres { .. }, Conn::Sqlite(_)) => return Err(mismatch()),
        }
        Ok(())
    }
}

impl Bind for Statements {
    fn bind<'t, T>(self, value: T) -> Self
    where
        T: Encode<'t, Sqlite> + Type<Sqlite> + Encode<'t, Postgres> + Type<Postgres>,
    {
        match self {
            Statements::Sqlite(query) => Statements::Sqlite(query.bind(value)),
            Statements::Postgres {
                mut statements,
                transaction,
            } => {
                // The first statement that still takes an argument gets it; once one has
                // all of its arguments its count is zero.
                if let Some(slot) = statements.iter_mut().find(|(left, _)| *left > 0) {
                    slot.0 -= 1;
                    let query = std::mem::replace(&mut slot.1, Query::new(Backend::Postgres, ""));
                    slot.1 = query.bind(value);
                }
                Statements::Postgres {
                    statements,
                    transaction,
                }
            }
        }
    }
}

/// `text` with its plain `?` arguments numbered `$1, $2, ...` (PostgreSQL's form), and how
/// many there are. A `?` inside a quoted string is left alone.
fn numbered(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len() + 16);
    let mut n = 0;
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    (out, n)
}

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn plain_arguments_are_numbered_outside_quotes() {
        assert_eq!(
            numbered("UPDATE t SET a = ?, b = 'x?y' WHERE id = ? AND c = '?';"),
            (
                "UPDATE t SET a = $1, b = 'x?y' WHERE id = $2 AND c = '?';".to_owned(),
                2
            )
        );
        assert_eq!(numbered("SELECT 1"), ("SELECT 1".to_owned(), 0));
    }
}
