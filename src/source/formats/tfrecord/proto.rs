//! `tf.train.Example` (tensorflow/core/example/{example,feature}.proto) as
//! prost messages derived by hand: no protoc and no build script.
//!
//! Three views of one record: [`ExampleRaw`] stops at each feature's name
//! and undecoded value bytes (a map entry is, on the wire, a message with
//! the key as field 1 and the value as field 2), so only asked-for features
//! are decoded; [`FeatureKind`] learns a feature's kind without decoding its
//! values; [`Feature`] decodes the values. Protobuf semantics carry over:
//! the last entry of a repeated key wins, and a value message split over
//! several fields merges (its parts are decoded in order into one message).

use bytes::Bytes;

/// `Example { Features features = 1; }`; repeated occurrences merge.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct ExampleRaw {
    #[prost(message, repeated, tag = "1")]
    pub features: Vec<FeaturesRaw>,
}

/// `Features { map<string, Feature> feature = 1; }`, entries undecoded.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct FeaturesRaw {
    #[prost(message, repeated, tag = "1")]
    pub feature: Vec<EntryRaw>,
}

/// One map entry: the key and the value's bytes (every occurrence).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct EntryRaw {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: Bytes,
    #[prost(bytes = "bytes", repeated, tag = "2")]
    pub value: Vec<Bytes>,
}

/// `Feature { oneof kind { BytesList = 1; FloatList = 2; Int64List = 3; } }`.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Feature {
    #[prost(oneof = "Kind", tags = "1, 2, 3")]
    pub kind: Option<Kind>,
}

/// The variants keep feature.proto's field names.
#[derive(Clone, PartialEq, prost::Oneof)]
#[allow(clippy::enum_variant_names)]
pub(super) enum Kind {
    #[prost(message, tag = "1")]
    BytesList(BytesList),
    #[prost(message, tag = "2")]
    FloatList(FloatList),
    #[prost(message, tag = "3")]
    Int64List(Int64List),
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct BytesList {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    pub value: Vec<Bytes>,
}

/// Packed or not: prost reads both, as protobuf must.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct FloatList {
    #[prost(float, repeated, tag = "1")]
    pub value: Vec<f32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Int64List {
    #[prost(int64, repeated, tag = "1")]
    pub value: Vec<i64>,
}

/// A feature's kind only: the lists are skipped field by field.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct FeatureKind {
    #[prost(oneof = "KindOnly", tags = "1, 2, 3")]
    pub kind: Option<KindOnly>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub(super) enum KindOnly {
    #[prost(message, tag = "1")]
    Bytes(Skip),
    #[prost(message, tag = "2")]
    Float(Skip),
    #[prost(message, tag = "3")]
    Int64(Skip),
}

/// A message whose fields are all skipped.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Skip {}

/// `SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }`
/// seen from field 2: an `Example` has no field 2, so a record whose field 2
/// parses as `FeatureLists` is a `SequenceExample` (read as an `Example` it
/// would silently show its context alone).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SequenceProbe {
    #[prost(message, repeated, tag = "2")]
    pub feature_lists: Vec<FeatureLists>,
}

/// `FeatureLists { map<string, FeatureList> feature_list = 1; }`.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct FeatureLists {
    #[prost(message, repeated, tag = "1")]
    pub feature_list: Vec<FeatureListEntry>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct FeatureListEntry {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<FeatureList>,
}

/// `FeatureList { repeated Feature feature = 1; }`.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct FeatureList {
    #[prost(message, repeated, tag = "1")]
    pub feature: Vec<FeatureKind>,
}
