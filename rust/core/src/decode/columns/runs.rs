//! Columns that cost nothing per row while they hold one repeated value.
//!
//! Most columns of a Pulsar topic are null on every row (chunks, markers,
//! transactions, broker metadata, headers, errors ...) and the boolean ones
//! are `false` on every row. [`NullRun`] and [`BoolRun`] count such a run instead of appending it
//! row by row; the run is written into the builder only when another value
//! follows. A column that is one run of nulls (or of `false`) up to `finish`
//! becomes an array over a shared buffer of zeros: no per-row write at all.

use std::sync::{Arc, Mutex, PoisonError};

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, GenericByteBuilder, ListBuilder, PrimitiveBuilder, StringBuilder,
    StructBuilder,
};
use arrow_array::types::{ArrowPrimitiveType, ByteArrayType};
use arrow_array::{
    new_empty_array, new_null_array, ArrayRef, BooleanArray, GenericByteArray, ListArray, MapArray,
    PrimitiveArray, StructArray,
};
use arrow_buffer::{
    BooleanBuffer, Buffer, MutableBuffer, NullBuffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::DataType;

use crate::decode::arrow_types::properties_type;

/// Zero buffers up to this size are kept for reuse by every later batch.
const KEEP_ZEROS: usize = 16 << 20;

static ZEROS: Mutex<Option<Buffer>> = Mutex::new(None);

/// An immutable buffer of at least `len` zero bytes, shared: the all-null
/// and all-`false` columns of every batch point into the same one.
pub(super) fn zeros(len: usize) -> Buffer {
    let mut kept = ZEROS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(b) = kept.as_ref().filter(|b| b.len() >= len) {
        return b.clone();
    }
    let size = len.max(1 << 16).next_power_of_two();
    let fresh = Buffer::from(MutableBuffer::from_len_zeroed(size));
    if size <= KEEP_ZEROS {
        *kept = Some(fresh.clone());
    }
    fresh
}

/// A validity bitmap of `len` nulls over the shared zeros.
fn all_nulls(len: usize) -> NullBuffer {
    let bits = BooleanBuffer::new(zeros(len.div_ceil(8)), 0, len);
    // SAFETY: every bit of the buffer is 0, so all `len` slots are null.
    unsafe { NullBuffer::new_unchecked(bits, len) }
}

/// `len + 1` zero offsets: every slot empty.
fn zero_offsets(len: usize) -> OffsetBuffer<i32> {
    let z = ScalarBuffer::new(zeros((len + 1) * 4), 0, len + 1);
    // SAFETY: all offsets are 0, hence non-negative and non-decreasing.
    unsafe { OffsetBuffer::new_unchecked(z) }
}

/// An array of `len` nulls of type `dt`, its buffers over the shared zeros
/// (other types fall back to `new_null_array`).
pub(in crate::decode) fn null_array(dt: &DataType, len: usize) -> ArrayRef {
    fn prim<T: ArrowPrimitiveType>(dt: &DataType, len: usize) -> ArrayRef {
        let values = ScalarBuffer::new(zeros(len * std::mem::size_of::<T::Native>()), 0, len);
        Arc::new(PrimitiveArray::<T>::new(values, Some(all_nulls(len))).with_data_type(dt.clone()))
    }
    fn bytes<T: ByteArrayType<Offset = i32>>(len: usize) -> ArrayRef {
        // SAFETY: empty offsets over an empty value buffer are valid for any
        // byte type (no text to check).
        Arc::new(unsafe {
            GenericByteArray::<T>::new_unchecked(
                zero_offsets(len),
                Buffer::from_vec(Vec::<u8>::new()),
                Some(all_nulls(len)),
            )
        })
    }
    use arrow_array::types::*;
    match dt {
        DataType::Int32 => prim::<Int32Type>(dt, len),
        DataType::Int64 => prim::<Int64Type>(dt, len),
        DataType::Timestamp(arrow_schema::TimeUnit::Millisecond, _) => {
            prim::<TimestampMillisecondType>(dt, len)
        }
        DataType::Utf8 => bytes::<Utf8Type>(len),
        DataType::Binary => bytes::<BinaryType>(len),
        DataType::Boolean => Arc::new(BooleanArray::new(
            BooleanBuffer::new(zeros(len.div_ceil(8)), 0, len),
            Some(all_nulls(len)),
        )),
        DataType::List(field) => Arc::new(ListArray::new(
            field.clone(),
            zero_offsets(len),
            new_empty_array(field.data_type()),
            Some(all_nulls(len)),
        )),
        _ => new_null_array(dt, len),
    }
}

/// `len` times `false`, no nulls, over the shared zeros.
fn all_false(len: usize) -> ArrayRef {
    Arc::new(BooleanArray::new(
        BooleanBuffer::new(zeros(len.div_ceil(8)), 0, len),
        None,
    ))
}

/// What [`NullRun`] needs of a builder.
pub(in crate::decode) trait Nulls {
    fn append_nulls(&mut self, n: usize);
    fn no_rows(&self) -> bool;
    fn finish_array(&mut self) -> ArrayRef;
}

impl<T: ArrowPrimitiveType> Nulls for PrimitiveBuilder<T> {
    #[inline]
    fn append_nulls(&mut self, n: usize) {
        PrimitiveBuilder::append_nulls(self, n)
    }
    fn no_rows(&self) -> bool {
        self.len() == 0
    }
    fn finish_array(&mut self) -> ArrayRef {
        Arc::new(self.finish())
    }
}

impl<T: ByteArrayType> Nulls for GenericByteBuilder<T> {
    #[inline]
    fn append_nulls(&mut self, n: usize) {
        GenericByteBuilder::append_nulls(self, n)
    }
    fn no_rows(&self) -> bool {
        self.len() == 0
    }
    fn finish_array(&mut self) -> ArrayRef {
        Arc::new(self.finish())
    }
}

impl Nulls for ListBuilder<StructBuilder> {
    #[inline]
    fn append_nulls(&mut self, n: usize) {
        ListBuilder::append_nulls(self, n)
    }
    fn no_rows(&self) -> bool {
        self.len() == 0
    }
    fn finish_array(&mut self) -> ArrayRef {
        Arc::new(self.finish())
    }
}

/// A column builder and the run of nulls appended after its last value.
/// The builder is allocated (for `rows` rows) at the first value: a column
/// that stays null allocates nothing.
pub(in crate::decode) struct NullRun<B: Nulls> {
    builder: B,
    nulls: usize,
    /// Rows to allocate for at the first value (0: allocated).
    rows: usize,
    make: fn(usize) -> B,
}

impl<B: Nulls> NullRun<B> {
    /// `make(rows)`: the builder for `rows` rows.
    pub(in crate::decode) fn new(make: fn(usize) -> B, rows: usize) -> Self {
        NullRun {
            builder: make(0),
            nulls: 0,
            rows,
            make,
        }
    }

    #[inline]
    pub(in crate::decode) fn append_null(&mut self) {
        self.nulls += 1;
    }

    #[inline]
    pub(in crate::decode) fn append_nulls(&mut self, n: usize) {
        self.nulls += n;
    }

    /// The builder, with the pending nulls written out: for a value.
    #[inline]
    pub(in crate::decode) fn builder(&mut self) -> &mut B {
        if self.rows > 0 {
            self.builder = (self.make)(std::mem::take(&mut self.rows));
        }
        if self.nulls > 0 {
            self.builder.append_nulls(std::mem::take(&mut self.nulls));
        }
        &mut self.builder
    }

    /// The column (`dt`: its schema type); over the shared zeros when every
    /// row is null.
    pub(in crate::decode) fn finish(&mut self, dt: &DataType) -> ArrayRef {
        if self.nulls > 0 && self.builder.no_rows() {
            return null_array(dt, std::mem::take(&mut self.nulls));
        }
        self.builder().finish_array()
    }
}

impl<T: ArrowPrimitiveType> NullRun<PrimitiveBuilder<T>> {
    #[inline]
    pub(in crate::decode) fn append_value(&mut self, v: T::Native) {
        self.builder().append_value(v);
    }

    #[inline]
    pub(in crate::decode) fn append_option(&mut self, v: Option<T::Native>) {
        match v {
            Some(v) => self.append_value(v),
            None => self.append_null(),
        }
    }

    #[inline]
    pub(in crate::decode) fn append_value_n(&mut self, v: T::Native, n: usize) {
        self.builder().append_value_n(v, n);
    }

    #[inline]
    pub(in crate::decode) fn append_option_n(&mut self, v: Option<T::Native>, n: usize) {
        match v {
            Some(v) => self.append_value_n(v, n),
            None => self.append_nulls(n),
        }
    }
}

impl<T: ByteArrayType> NullRun<GenericByteBuilder<T>> {
    #[inline]
    pub(in crate::decode) fn append_value(&mut self, v: impl AsRef<T::Native>) {
        self.builder().append_value(v);
    }

    #[inline]
    pub(in crate::decode) fn append_option(&mut self, v: Option<impl AsRef<T::Native>>) {
        match v {
            Some(v) => self.append_value(v),
            None => self.append_null(),
        }
    }

    #[inline]
    pub(in crate::decode) fn append_value_n(&mut self, v: impl AsRef<T::Native>, n: usize) {
        self.builder().append_value_n(v, n);
    }

    #[inline]
    pub(in crate::decode) fn append_option_n(
        &mut self,
        v: Option<impl AsRef<T::Native>>,
        n: usize,
    ) {
        match v {
            Some(v) => self.append_value_n(v, n),
            None => self.append_nulls(n),
        }
    }
}

/// A boolean column and the run of one value (or null) appended after the
/// builder's last value: runs of nulls and of `false` up to `finish` are
/// free.
pub(in crate::decode) struct BoolRun {
    builder: BooleanBuilder,
    value: Option<bool>,
    n: usize,
    /// Rows to allocate for when the first run is written (0: allocated).
    rows: usize,
}

impl BoolRun {
    pub(in crate::decode) fn new(rows: usize) -> Self {
        BoolRun {
            builder: BooleanBuilder::new(),
            value: None,
            n: 0,
            rows,
        }
    }

    #[inline]
    pub(in crate::decode) fn append_option_n(&mut self, value: Option<bool>, n: usize) {
        if self.value != value && self.n > 0 {
            self.flush();
        }
        self.value = value;
        self.n += n;
    }

    #[inline]
    pub(in crate::decode) fn append_option(&mut self, value: Option<bool>) {
        self.append_option_n(value, 1);
    }

    #[inline]
    pub(in crate::decode) fn append_value(&mut self, value: bool) {
        self.append_option_n(Some(value), 1);
    }

    #[inline]
    pub(in crate::decode) fn append_null(&mut self) {
        self.append_option_n(None, 1);
    }

    #[inline]
    pub(in crate::decode) fn append_n(&mut self, n: usize, value: bool) {
        self.append_option_n(Some(value), n);
    }

    fn flush(&mut self) {
        if self.rows > 0 {
            self.builder = BooleanBuilder::with_capacity(std::mem::take(&mut self.rows));
        }
        let n = std::mem::take(&mut self.n);
        match self.value {
            Some(v) => self.builder.append_n(n, v),
            None => self.builder.append_nulls(n),
        }
    }

    pub(in crate::decode) fn finish(&mut self, dt: &DataType) -> ArrayRef {
        if self.n > 0 && self.builder.len() == 0 {
            match self.value {
                None => return null_array(dt, std::mem::take(&mut self.n)),
                Some(false) => return all_false(std::mem::take(&mut self.n)),
                Some(true) => {}
            }
        }
        if self.n > 0 {
            self.flush();
        }
        Arc::new(self.builder.finish())
    }
}

/// The `properties` column (`map<string, string>`), built by hand: most
/// messages have no properties, and a run of empty maps is counted, not
/// appended row by row (all empty up to `finish`: offsets over the shared
/// zeros).
pub(in crate::decode) struct PropertiesColumn {
    keys: StringBuilder,
    values: StringBuilder,
    /// Offsets of the written maps (starts with 0).
    offsets: Vec<i32>,
    nulls: NullBufferBuilder,
    /// Empty, valid maps after the written ones.
    empty: usize,
    /// Rows to allocate the offsets for at the first write (0: allocated).
    rows: usize,
}

impl PropertiesColumn {
    pub(in crate::decode) fn new(rows: usize) -> Self {
        PropertiesColumn {
            keys: StringBuilder::new(),
            values: StringBuilder::new(),
            offsets: vec![0],
            nulls: NullBufferBuilder::new(0),
            empty: 0,
            rows,
        }
    }

    /// The keys of the map being built (a value for each, then `append`).
    #[inline]
    pub(in crate::decode) fn keys(&mut self) -> &mut StringBuilder {
        &mut self.keys
    }

    #[inline]
    pub(in crate::decode) fn values(&mut self) -> &mut StringBuilder {
        &mut self.values
    }

    /// Ends the map of one row: the pairs appended since the last one, or a
    /// null map (`valid == false`; appended pairs then belong to no row).
    #[inline]
    pub(in crate::decode) fn append(&mut self, valid: bool) {
        debug_assert_eq!(self.keys.len(), self.values.len());
        let end = self.keys.len() as i32;
        let last = self.offsets[self.offsets.len() - 1];
        if valid && end == last {
            self.empty += 1;
            return;
        }
        self.write_empty();
        self.offsets.push(end);
        self.nulls.append(valid);
    }

    fn write_empty(&mut self) {
        if self.rows > 0 {
            self.offsets
                .reserve(std::mem::take(&mut self.rows).saturating_sub(self.offsets.len()));
        }
        if self.empty > 0 {
            let last = self.offsets[self.offsets.len() - 1];
            self.offsets.extend(std::iter::repeat_n(last, self.empty));
            self.nulls
                .append_n_non_nulls(std::mem::take(&mut self.empty));
        }
    }

    pub(in crate::decode) fn finish(&mut self) -> ArrayRef {
        let DataType::Map(field, ordered) = properties_type() else {
            unreachable!("properties are a map")
        };
        let DataType::Struct(fields) = field.data_type() else {
            unreachable!("map entries are a struct")
        };
        let offsets = if self.offsets.len() == 1 {
            zero_offsets(std::mem::take(&mut self.empty))
        } else {
            self.write_empty();
            let offsets = std::mem::replace(&mut self.offsets, vec![0]);
            // SAFETY: each offset is the key count when its map ended, which
            // only grows; the first is 0.
            unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) }
        };
        let entries = StructArray::new(
            fields.clone(),
            vec![Arc::new(self.keys.finish()), Arc::new(self.values.finish())],
            None,
        );
        Arc::new(MapArray::new(
            field.clone(),
            offsets,
            entries,
            self.nulls.finish(),
            ordered,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::schema::message_schema;
    use arrow_array::builder::{BinaryBuilder, Int64Builder, StringBuilder};
    use arrow_array::Array;

    #[test]
    fn null_arrays_over_zeros_equal_arrows_null_arrays() {
        for field in message_schema().fields() {
            for len in [0, 1, 7, 8, 9, 1000, 70_000] {
                let ours = null_array(field.data_type(), len);
                let arrow = new_null_array(field.data_type(), len);
                assert_eq!(ours.data_type(), field.data_type(), "{}", field.name());
                assert_eq!(ours.len(), len);
                assert_eq!(ours.null_count(), len, "{}", field.name());
                assert_eq!(ours.to_data(), arrow.to_data(), "{} x {len}", field.name());
                ours.to_data().validate_full().unwrap();
            }
        }
        // Columns share one buffer of zeros instead of a buffer each.
        let a = null_array(&DataType::Int64, 100);
        let b = null_array(&DataType::Int32, 100);
        assert_eq!(
            a.to_data().buffers()[0].as_ptr(),
            b.to_data().buffers()[0].as_ptr()
        );
    }

    #[test]
    fn zeros_outgrow_the_kept_buffer() {
        let big = zeros(KEEP_ZEROS * 2);
        assert!(big.len() >= KEEP_ZEROS * 2);
        assert!(big.iter().all(|&b| b == 0));
        assert!(zeros(10).len() <= KEEP_ZEROS, "a huge buffer is not kept");
    }

    /// Every mix of values, nulls and runs gives the builder's own array.
    #[test]
    fn runs_equal_appending_row_by_row() {
        let shapes: [&[Option<i64>]; 6] = [
            &[],
            &[None, None, None],
            &[Some(1), None, None],
            &[None, None, Some(2), Some(3), None],
            &[Some(4), Some(5)],
            &[None, Some(6), None, Some(7), None, None],
        ];
        for shape in shapes {
            for repeat in [1, 3, 9] {
                let mut plain = Int64Builder::new();
                let mut run = NullRun::new(Int64Builder::with_capacity, 4);
                let mut text = NullRun::new(|r| StringBuilder::with_capacity(r, r), 4);
                let mut plain_text = StringBuilder::new();
                let mut bin = NullRun::new(|_| BinaryBuilder::new(), 0);
                let mut plain_bin = BinaryBuilder::new();
                for v in shape {
                    for _ in 0..repeat {
                        plain.append_option(*v);
                        plain_text.append_option(v.map(|v| v.to_string()));
                        plain_bin.append_option(v.map(|v| v.to_le_bytes()));
                    }
                    run.append_option_n(*v, repeat);
                    text.append_option_n(v.map(|v| v.to_string()), repeat);
                    match v {
                        Some(v) => {
                            for _ in 0..repeat {
                                bin.append_value(v.to_le_bytes());
                            }
                        }
                        None => bin.append_nulls(repeat),
                    }
                }
                let ours = run.finish(&DataType::Int64);
                assert_eq!(
                    ours.to_data(),
                    plain.finish().to_data(),
                    "{shape:?} x {repeat}"
                );
                let ours = text.finish(&DataType::Utf8);
                assert_eq!(ours.to_data(), plain_text.finish().to_data());
                let ours = bin.finish(&DataType::Binary);
                assert_eq!(ours.to_data(), plain_bin.finish().to_data());
                // The builder is ready for the next batch.
                run.append_value(8);
                assert_eq!(run.finish(&DataType::Int64).len(), 1);
            }
        }
    }

    #[test]
    fn bool_runs_equal_appending_row_by_row() {
        let values = [None, Some(false), Some(true)];
        // Every sequence of up to 4 runs of the three values, of lengths 1 and 3.
        for code in 0..(6usize.pow(4)) {
            for runs in 0..=4 {
                let mut plain = BooleanBuilder::new();
                let mut ours = BoolRun::new(code % 4);
                let mut c = code;
                for _ in 0..runs {
                    let (v, n) = (values[c % 3], [1, 3][(c / 3) % 2]);
                    c /= 6;
                    for _ in 0..n {
                        plain.append_option(v);
                    }
                    match v {
                        Some(b) if n == 1 => ours.append_value(b),
                        Some(b) => ours.append_n(n, b),
                        None if n == 1 => ours.append_null(),
                        None => ours.append_option_n(None, n),
                    }
                }
                let expect = plain.finish();
                let got = ours.finish(&DataType::Boolean);
                assert_eq!(got.to_data(), expect.to_data(), "code {code}, {runs} runs");
                assert_eq!(got.null_count(), expect.null_count());
            }
        }
    }

    #[test]
    fn properties_equal_the_map_builders() {
        use crate::decode::arrow_types::properties_builder;
        // 0: empty map, 1: one pair, 2: two pairs (one null value), 3: null map.
        for code in 0..(4usize.pow(5)) {
            for rows in 0..=5 {
                let mut plain = properties_builder();
                let mut ours = PropertiesColumn::new(code % 3);
                let mut c = code;
                for r in 0..rows {
                    let kind = c % 4;
                    c /= 4;
                    for j in 0..kind.min(2) {
                        let (k, v) = (format!("k{r}{j}"), (j == 0).then(|| format!("v{r}")));
                        plain.keys().append_value(&k);
                        plain.values().append_option(v.as_deref());
                        ours.keys().append_value(&k);
                        ours.values().append_option(v.as_deref());
                    }
                    plain.append(kind != 3).unwrap();
                    ours.append(kind != 3);
                }
                let expect = plain.finish();
                let got = ours.finish();
                got.to_data().validate_full().unwrap();
                assert_eq!(got.data_type(), &properties_type());
                assert_eq!(got.to_data(), expect.to_data(), "code {code}, {rows} rows");
            }
        }
    }
}
