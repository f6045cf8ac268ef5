//! Reading `/sd/{job}`'s query string into the view it asks for: none (the whole job),
//! `shard=I&shards=N`, `node=NAME` (empty: targets on no node) or `member=POD`. A
//! malformed query is refused with a sentence saying why, answered as `400`.

use arcstr::ArcStr;

use crate::service::views::{Bucket, MAX_SHARDS, ViewKind, ViewQuery};

/// The view `query` (a URL's query string, without `?`) asks for, or why it is not one.
pub fn parse_view_query(query: &str) -> Result<ViewQuery, String> {
    let mut shard = None;
    let mut shards = None;
    let mut node = None;
    let mut member = None;
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        let slot = match &*name {
            "shard" => &mut shard,
            "shards" => &mut shards,
            "node" => &mut node,
            "member" => &mut member,
            other => {
                return Err(format!(
                    "unknown parameter {other:?}: a view is shard=I&shards=N, node=NAME or member=POD"
                ));
            }
        };
        if slot.replace(value.into_owned()).is_some() {
            return Err(format!("parameter {name:?} is given twice"));
        }
    }
    match (shard, shards, node, member) {
        (None, None, None, None) => Ok(ViewQuery::All),
        (Some(i), Some(n), None, None) => shard_view(&i, &n),
        (None, None, Some(node), None) => Ok(ViewQuery::Node(ArcStr::from(node))),
        (None, None, None, Some(member)) if member.is_empty() => {
            Err("member= must name a member pod".into())
        }
        (None, None, None, Some(member)) => Ok(ViewQuery::Member(ArcStr::from(member))),
        (Some(_), None, None, None) => Err("shard= needs shards= (how many shards)".into()),
        (None, Some(_), None, None) => Err("shards= needs shard= (which shard)".into()),
        _ => Err("ask for one view at a time: shard=I&shards=N, node=NAME or member=POD".into()),
    }
}

/// The query string that asks for `bucket` of `kind`.
pub fn view_query_text(kind: ViewKind, bucket: &Bucket) -> String {
    let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    match (kind, bucket) {
        (ViewKind::Shards(n), Bucket::Shard(i)) => format!("shard={i}&shards={n}"),
        (ViewKind::Node, Bucket::Name(node)) => format!("node={}", encode(node)),
        (ViewKind::Member, Bucket::Name(member)) => format!("member={}", encode(member)),
        (ViewKind::Allocator, Bucket::Name(member)) => format!("collector_id={}", encode(member)),
        (kind, bucket) => format!("{kind:?}={bucket:?}"),
    }
}

fn shard_view(index: &str, count: &str) -> Result<ViewQuery, String> {
    let count: u64 = count
        .parse()
        .map_err(|_| format!("shards={count:?} is not a whole number"))?;
    let index: u64 = index
        .parse()
        .map_err(|_| format!("shard={index:?} is not a whole number"))?;
    if count == 0 || count > MAX_SHARDS {
        return Err(format!("shards={count}: must be from 1 to {MAX_SHARDS}"));
    }
    if index >= count {
        return Err(format!(
            "shard={index} with shards={count}: shards are numbered from 0 to {}",
            count - 1
        ));
    }
    Ok(ViewQuery::Shard { index, count })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_are_read_and_mistakes_named() {
        assert_eq!(parse_view_query(""), Ok(ViewQuery::All));
        assert_eq!(
            parse_view_query("shard=2&shards=3"),
            Ok(ViewQuery::Shard { index: 2, count: 3 })
        );
        assert_eq!(
            parse_view_query("node="),
            Ok(ViewQuery::Node(ArcStr::from("")))
        );
        assert_eq!(
            parse_view_query("member=prom-0"),
            Ok(ViewQuery::Member(ArcStr::from("prom-0")))
        );
        for (query, says) in [
            ("shard=1", "needs shards="),
            ("shards=2", "needs shard="),
            ("shard=2&shards=2", "numbered from 0 to 1"),
            ("shard=0&shards=0", "from 1 to"),
            ("shard=x&shards=2", "not a whole number"),
            ("node=a&shard=0&shards=2", "one view at a time"),
            ("node=a&node=b", "given twice"),
            ("nodes=a", "unknown parameter"),
            ("member=", "must name"),
        ] {
            let e = parse_view_query(query).expect_err(query);
            assert!(e.contains(says), "{query}: {e}");
        }
    }
}
