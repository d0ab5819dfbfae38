//! Issue 24's and 26's calls (op 19, its selector's last value with a high nibble of 8 or
//! more): `publish_with` and `publish_many_with` with keys, delays and due instants of any
//! value; an application's transaction on two slots (begin, execute and query with
//! parameters of every type and bad ones, publish, commit into arrays shorter than its
//! publishes, rollback, free, a stale handle, its transport closed under it); a watch's calls
//! (watch, fd, rearm, free, a stale one). The SQL of execute and query comes from a fixed
//! list, never from fuzzed bytes, so no input can reach past the scratch directory
//! (ATTACH) or drop the queue's tables. A query's transaction holds its transport's
//! connection, so the same op ends it (every later call on that transport would wait the
//! busy timeout).

use super::*;

/// Statements on the application's table `app`, good and failing ones.
const SQL: &[&CStr] = &[
    c"CREATE TABLE IF NOT EXISTS app (a, b)",
    c"INSERT INTO app (a, b) VALUES (?1, ?2)",
    c"INSERT INTO app (a) VALUES (?)",
    c"SELECT a, b, typeof(a) FROM app ORDER BY rowid",
    c"SELECT ?1, ?2, ?3, ?4",
    c"UPDATE app SET b = ?2 WHERE a = ?1 RETURNING a, b",
    c"DELETE FROM app",
    c"INSERT INTO no_such_table VALUES (1)",
    c"SELEC 1",
    c"",
];

/// Up to four parameters, any of which may be bad (an unknown type, a NULL text, text that
/// is not UTF-8, a NULL blob with a size, a NaN or infinite real); whether one is.
fn params(input: &mut Input) -> (Vec<harel_value>, Vec<Option<CString>>, Vec<Option<Vec<u8>>>, bool) {
    let n = input.byte() as usize % 5;
    let (mut values, mut texts, mut blobs, mut bad) = (Vec::new(), Vec::new(), Vec::new(), false);
    for _ in 0..n {
        let kind = input.byte();
        let mut v = harel_value { r#type: i32::from(kind % 5), integer: 0, real: 0.0, text: ptr::null(), blob: ptr::null(), size: 0 };
        let (mut text, mut blob) = (None, None);
        match kind % 6 {
            0 => {}
            1 => v.integer = input.u64() as i64,
            2 => {
                v.real = input.f64();
                bad |= !v.real.is_finite();
            }
            3 => {
                text = input.optional_cstring();
                bad |= !is_utf8(&text);
            }
            4 => {
                blob = input.optional_bytes();
                v.size = match &blob {
                    Some(b) => b.len(),
                    None => input.byte() as usize % 3,
                };
                bad |= blob.is_none() && v.size > 0;
            }
            _ => {
                v.r#type = input.i32();
                bad |= !(0..=4).contains(&v.r#type);
                // A valid type chosen this way has its field zeroed: NULL, 0, 0.0, a NULL
                // text (bad), an empty blob (fine).
                bad |= v.r#type == 3;
            }
        }
        texts.push(text);
        blobs.push(blob);
        values.push(v);
    }
    for ((v, t), b) in values.iter_mut().zip(&texts).zip(&blobs) {
        v.text = ptr_of(t);
        v.blob = b.as_ref().map_or(ptr::null(), |b| b.as_ptr());
    }
    (values, texts, blobs, bad)
}

/// A transaction slot's handle: the live one, NULL, or a freed one (which must be refused).
fn tx_of(input: &mut Input, state: &State) -> (*mut harel_tx, bool) {
    let sel = input.byte();
    match sel % 8 {
        7 => (ptr::null_mut(), true),
        6 if state.freed_tx.is_some() => (state.freed_tx.unwrap_or(ptr::null_mut()), true),
        _ => match state.txs[sel as usize % 2] {
            Some(tx) => (tx, false),
            None => (ptr::null_mut(), true),
        },
    }
}

pub(super) fn producers(input: &mut Input, state: &mut State, arg: ErrArg) {
    match input.byte() % 12 {
        0 | 1 => publish_with(input, state, arg),
        2 => publish_many_with(input, state, arg),
        3 => begin(input, state, arg),
        4 => execute(input, state, arg),
        5 => query(input, state, arg),
        6 => tx_publish(input, state, arg),
        7 => commit(input, state, arg),
        8 => end(input, state, arg),
        9 => watch(input, state, arg),
        10 => rearm(input, state, arg),
        _ => {
            let slot = input.byte() as usize % 2;
            if let Some(w) = state.watches[slot].take() {
                harel_watch_free(w);
                harel_watch_free(w); // a second free does nothing
                state.freed_watch = Some(w);
            }
        }
    }
}

/// Delivery options of any value: a key (NULL, good or bad), a delay and a due instant;
/// whether the ABI calls them bad.
fn delivery(input: &mut Input) -> (Option<CString>, f64, f64, bool) {
    let key = input.optional_cstring();
    let (delay, not_before) = (input.f64(), input.f64());
    let bad_key = key.as_ref().is_some_and(|k| k.to_str().is_err() || k.as_bytes().is_empty() || k.as_bytes().len() > 256);
    let bad_delay = !(delay.is_finite() && (0.0..=315_360_000.0).contains(&delay));
    let bad_due = not_before.is_nan() || not_before.is_infinite();
    (key, delay, not_before, bad_key || bad_delay || bad_due)
}

fn publish_with(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let (group, event, priority) = (input.optional_cstring(), input.optional_cstring(), input.i32());
    let (key, delay, not_before, bad) = delivery(input);
    let (mut seq, mut duplicate) = (0i64, 0);
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_publish_with(
        t, ptr_of(&group), ptr_of(&event), priority, ptr::null(), ptr_of(&key), delay, not_before,
        &mut seq, &mut duplicate, err.ptr(),
    );
    check("publish_with", status, err, state);
    if t.is_null() || bad_string(&group) || !is_utf8(&event) || !(0..=4).contains(&priority) || bad {
        expect_argument("publish_with", status);
    }
    if status == harel_status::HAREL_OK {
        assert!(seq > 0 && (duplicate == 0 || duplicate == 1), "publish_with: seq {seq}, duplicate {duplicate}");
    }
}

fn publish_many_with(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let n = input.byte() as usize % 4;
    let mut bad = false;
    let mut fields = Vec::new();
    for _ in 0..n {
        let (group, event) = (input.optional_cstring(), input.optional_cstring());
        let (key, delay, not_before, bad_delivery) = delivery(input);
        bad |= bad_string(&group) || !is_utf8(&event) || bad_delivery;
        fields.push((group, event, key, delay, not_before));
    }
    let messages: Vec<harel_message> = fields
        .iter()
        .map(|(g, e, ..)| harel_message { group_id: ptr_of(g), event_json: ptr_of(e), priority: 0, routing_key: ptr::null() })
        .collect();
    let keys: Vec<*const c_char> = fields.iter().map(|f| ptr_of(&f.2)).collect();
    let delays: Vec<f64> = fields.iter().map(|f| f.3).collect();
    let due: Vec<f64> = fields.iter().map(|f| f.4).collect();
    let mut seqs = vec![0i64; n];
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_publish_many_with(
        t, messages.as_ptr(), n, keys.as_ptr(), delays.as_ptr(), due.as_ptr(), seqs.as_mut_ptr(), ptr::null_mut(),
        err.ptr(),
    );
    check("publish_many_with", status, err, state);
    if t.is_null() || bad {
        expect_argument("publish_many_with", status);
    }
    if status == harel_status::HAREL_OK {
        assert!(seqs.iter().all(|s| *s > 0), "publish_many_with: seqs {seqs:?}");
    }
}

fn begin(input: &mut Input, state: &mut State, arg: ErrArg) {
    let sel = input.byte();
    let t = state.handle(sel);
    let slot = input.byte() as usize % 2;
    let mut out: *mut harel_tx = 0x1 as *mut _;
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_begin(t, &mut out, err.ptr());
    check("begin", status, err, state);
    if t.is_null() {
        expect_argument("begin", status);
    }
    out_after("begin", status, out.cast());
    if status == harel_status::HAREL_OK {
        if let Some(old) = state.txs[slot].replace(out) {
            harel_tx_free(old);
            state.freed_tx = Some(old);
        }
    }
}

fn execute(input: &mut Input, state: &mut State, arg: ErrArg) {
    let (tx, gone) = tx_of(input, state);
    let sql = SQL[input.byte() as usize % SQL.len()];
    let (values, _texts, _blobs, bad) = params(input);
    let mut err = CallErr::new(arg, state);
    let status = harel_tx_execute(tx, sql.as_ptr(), values.as_ptr(), values.len(), err.ptr());
    check("tx_execute", status, err, state);
    if gone || bad || sql.is_empty() {
        expect_argument("tx_execute", status);
    }
}

fn query(input: &mut Input, state: &mut State, arg: ErrArg) {
    let (tx, gone) = tx_of(input, state);
    let sql = SQL[input.byte() as usize % SQL.len()];
    let (values, _texts, _blobs, bad) = params(input);
    let commit = input.bool();
    let mut out: *mut harel_rows = 0x1 as *mut _;
    let mut err = CallErr::new(arg, state);
    let status = harel_tx_query(tx, sql.as_ptr(), values.as_ptr(), values.len(), &mut out, err.ptr());
    check("tx_query", status, err, state);
    if gone || bad || sql.is_empty() {
        expect_argument("tx_query", status);
    }
    out_after("tx_query", status, out.cast());
    if status == harel_status::HAREL_OK {
        // SAFETY: the library's rows, until freed below.
        let rows = unsafe { &*out };
        let n = rows.n_rows * rows.n_columns;
        assert!(n == 0 || !rows.values.is_null(), "tx_query: {n} values but no array");
        for i in 0..n {
            // SAFETY: n values, per the header.
            let v = unsafe { &*rows.values.add(i) };
            match v.r#type {
                0..=2 => {}
                3 => {
                    // SAFETY: a text of `size` bytes and its NUL, per the header.
                    let text = unsafe { std::slice::from_raw_parts(v.text.cast::<u8>(), v.size + 1) };
                    assert_eq!(text[v.size], 0, "tx_query: a text without its NUL");
                    assert!(std::str::from_utf8(&text[..v.size]).is_ok(), "tx_query: a text that is not UTF-8");
                }
                4 => assert!(v.size == 0 || !v.blob.is_null(), "tx_query: a blob without its bytes"),
                other => panic!("tx_query: a value of type {other}"),
            }
        }
        harel_rows_free(out);
    }
    // The query holds the transport's connection: end the transaction now.
    if !gone {
        let status = if commit {
            harel_tx_commit(tx, ptr::null_mut(), ptr::null_mut(), 0, ptr::null_mut(), ptr::null_mut())
        } else {
            harel_tx_rollback(tx, ptr::null_mut())
        };
        check_plain("tx_commit or tx_rollback after a query", status, state);
    }
}

fn tx_publish(input: &mut Input, state: &mut State, arg: ErrArg) {
    let (tx, gone) = tx_of(input, state);
    let (group, event, priority) = (input.optional_cstring(), input.optional_cstring(), input.i32());
    let (key, delay, not_before, bad) = delivery(input);
    let mut err = CallErr::new(arg, state);
    let status = harel_tx_publish(
        tx, ptr_of(&group), ptr_of(&event), priority, ptr::null(), ptr_of(&key), delay, not_before, err.ptr(),
    );
    check("tx_publish", status, err, state);
    if gone || bad_string(&group) || !is_utf8(&event) || !(0..=4).contains(&priority) || bad {
        expect_argument("tx_publish", status);
    }
}

fn commit(input: &mut Input, state: &mut State, arg: ErrArg) {
    let (tx, gone) = tx_of(input, state);
    let room = input.byte() as usize % 3;
    let (mut seqs, mut duplicates, mut published) = (vec![0i64; room], vec![7; room], usize::MAX);
    let mut err = CallErr::new(arg, state);
    let status =
        harel_tx_commit(tx, seqs.as_mut_ptr(), duplicates.as_mut_ptr(), room, &mut published, err.ptr());
    check("tx_commit", status, err, state);
    if gone {
        expect_argument("tx_commit", status);
    }
    if status == harel_status::HAREL_OK {
        for i in 0..room.min(published) {
            assert!(seqs[i] > 0 && (duplicates[i] == 0 || duplicates[i] == 1), "tx_commit: {seqs:?} {duplicates:?}");
        }
        assert!(published != usize::MAX, "tx_commit: n_published not set");
    }
}

/// A rollback, or a free (twice: the second does nothing) that leaves a stale handle.
fn end(input: &mut Input, state: &mut State, arg: ErrArg) {
    let sel = input.byte();
    let slot = sel as usize % 2;
    if sel % 4 < 2 {
        let (tx, gone) = tx_of(input, state);
        let mut err = CallErr::new(arg, state);
        let status = harel_tx_rollback(tx, err.ptr());
        check("tx_rollback", status, err, state);
        if tx.is_null() || (gone && Some(tx) == state.freed_tx) {
            expect_argument("tx_rollback", status);
        }
    } else if let Some(tx) = state.txs[slot].take() {
        harel_tx_free(tx);
        harel_tx_free(tx);
        state.freed_tx = Some(tx);
    }
}

fn watch(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let slot = input.byte() as usize % 2;
    let min_priority = input.i32();
    let key = input.optional_cstring();
    let keys = [ptr_of(&key)];
    let n = input.byte() as usize % 2;
    let mut out: *mut harel_watch = 0x1 as *mut _;
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_watch(t, min_priority, keys.as_ptr(), n, &mut out, err.ptr());
    check("watch", status, err, state);
    if t.is_null() || !(0..=4).contains(&min_priority) || (n == 1 && bad_string(&key)) {
        expect_argument("watch", status);
    }
    out_after("watch", status, out.cast());
    if status == harel_status::HAREL_OK {
        let mut fd = -1;
        check_plain("watch_fd", harel_watch_fd(out, &mut fd, ptr::null_mut()), state);
        assert!(fd >= 0, "watch_fd: {fd}");
        if let Some(old) = state.watches[slot].replace(out) {
            harel_watch_free(old);
        }
    }
}

/// A rearm of a slot's watch (or a stale or NULL one) on either handle.
fn rearm(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let sel = input.byte();
    let (w, gone) = match sel % 8 {
        7 => (ptr::null_mut(), true),
        6 if state.freed_watch.is_some() => (state.freed_watch.unwrap_or(ptr::null_mut()), true),
        _ => match state.watches[sel as usize % 2] {
            Some(w) => (w, false),
            None => (ptr::null_mut(), true),
        },
    };
    let mut err = CallErr::new(arg, state);
    let status = harel_watch_rearm(t, w, err.ptr());
    check("watch_rearm", status, err, state);
    if t.is_null() || gone {
        expect_argument("watch_rearm", status);
    }
}
