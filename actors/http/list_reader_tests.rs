//! The LIST reader fed pages of byte chunks: parts as they decode, pages followed to
//! the list's end, and the attempt's budget: pages that come round again or bring
//! nothing new, bytes, objects, time, and a body that stops mid-item (paused time).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};

use super::*;

const STALL: Duration = Duration::from_secs(30);

fn pod_json(name: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"5"}},"status":{{"podIP":"10.0.0.1"}}}}"#
    )
}

fn page<S: AsRef<str>>(rv: u64, names: &[S], cont: Option<&str>) -> Vec<u8> {
    let items: Vec<String> = names.iter().map(|n| pod_json(n.as_ref())).collect();
    let cont = cont
        .map(|c| format!(r#","continue":"{c}""#))
        .unwrap_or_default();
    format!(
        r#"{{"metadata":{{"resourceVersion":"{rv}"{cont}}},"items":[{}]}}"#,
        items.join(",")
    )
    .into_bytes()
}

fn reading() -> ListReading {
    ListReading {
        role: Role::Pod,
        limits: ListLimits {
            max_object: 1 << 20,
            max_depth: 64,
        },
        bounds: ListBounds {
            bytes: usize::MAX,
            objects: usize::MAX,
            time: Duration::from_secs(300),
        },
        stall: STALL,
    }
}

/// A server whose page for each continue token is `answer(token)`, in chunks of
/// `chunk` bytes; it records the tokens asked for.
fn server(
    chunk: usize,
    answer: impl Fn(Option<&str>) -> Vec<u8> + 'static,
) -> (FetchPage, Rc<RefCell<Vec<Option<String>>>>) {
    let asked = Rc::new(RefCell::new(Vec::new()));
    let seen = Rc::clone(&asked);
    let fetch: FetchPage = Box::new(move |token: Option<String>| {
        let bytes = answer(token.as_deref());
        seen.borrow_mut().push(token);
        let pieces: Vec<Result<Bytes, String>> = bytes
            .chunks(chunk)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let body = futures_util::stream::iter(pieces).boxed_local();
        std::future::ready(Ok(PageBody {
            encoding: Encoding::Json,
            length: None,
            body,
        }))
        .boxed_local()
    });
    (fetch, asked)
}

async fn read(fetch: FetchPage, reading: ListReading) -> Vec<Result<Received, Failure>> {
    read_list(fetch, reading, Window::new(4))
        .map(|item| item.received)
        .collect()
        .await
}

/// The parts' sizes, in order.
fn parts(items: &[Result<Received, Failure>]) -> Vec<usize> {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(Received::Part(o)) => Some(o.len()),
            _ => None,
        })
        .collect()
}

fn failure(items: &[Result<Received, Failure>]) -> Option<&Failure> {
    items.iter().find_map(|item| item.as_ref().err())
}

#[actix_rt::test]
async fn pages_are_followed_to_the_end_their_objects_in_parts_the_first_empty() {
    let names: Vec<String> = (0..600).map(|i| format!("p{i}")).collect();
    let (first, second) = (names[..300].to_vec(), names[300..].to_vec());
    let (fetch, asked) = server(4096, move |token| match token {
        None => page(5, &first, Some("tok")),
        Some(_) => page(7, &second, None),
    });
    let items = read(fetch, reading()).await;
    assert_eq!(*asked.borrow(), [None, Some("tok".to_string())]);
    assert_eq!(
        parts(&items)[0],
        0,
        "the attempt starts with its first body"
    );
    assert_eq!(parts(&items).iter().sum::<usize>(), 600);
    // A part is handed on once it holds 256 objects (with the rest of its piece).
    assert!(
        parts(&items).iter().all(|n| *n < 300),
        "{:?}",
        parts(&items)
    );
    assert!(
        matches!(items.last(), Some(Ok(Received::ListEnd(end))) if &*end.resource_version == "7" && end.rest.is_empty()),
        "{:?}",
        items.last()
    );
    let opened = items
        .iter()
        .filter(|i| matches!(i, Ok(Received::Opened(_))))
        .count();
    assert_eq!(opened, 2, "one response per page");
}

#[actix_rt::test]
async fn pages_that_come_round_again_or_bring_nothing_new_end_the_attempt() {
    // t1, t2, then t1 again.
    let (fetch, asked) = server(4096, |token| match token {
        Some("t1") => page(5, &["b"], Some("t2")),
        _ => page(5, &["a"], Some("t1")),
    });
    let items = read(fetch, reading()).await;
    assert!(matches!(failure(&items), Some(Failure::Endless(why)) if why.contains("came round")));
    assert_eq!(asked.borrow().len(), 3);
    // A fresh token every time, the same object on every page: the third page brings
    // nothing the second did not.
    let n = Rc::new(RefCell::new(0));
    let (fetch, asked) = server(4096, move |_| {
        *n.borrow_mut() += 1;
        page(5, &["same"], Some(&format!("t{}", n.borrow())))
    });
    let items = read(fetch, reading()).await;
    assert!(
        matches!(failure(&items), Some(Failure::Endless(why)) if why.contains("nothing new")),
        "{items:?}"
    );
    assert_eq!(asked.borrow().len(), 3);
    // An empty page that names a next one.
    let (fetch, asked) = server(4096, |_| page::<&str>(5, &[], Some("t")));
    let items = read(fetch, reading()).await;
    assert!(matches!(failure(&items), Some(Failure::Endless(_))));
    assert_eq!(asked.borrow().len(), 1);
}

#[actix_rt::test]
async fn an_attempt_is_held_to_its_bounds_over_all_its_pages() {
    let names: Vec<String> = (0..100).map(|i| format!("p{i}")).collect();
    let pages = move |token: Option<&str>| {
        let k: usize = token.map_or(0, |t| t.parse().unwrap_or(0));
        let on_page: Vec<&str> = names[k * 10..k * 10 + 10]
            .iter()
            .map(String::as_str)
            .collect();
        page(5, &on_page, (k < 9).then(|| (k + 1).to_string()).as_deref())
    };
    let whole = read(server(4096, pages.clone()).0, reading()).await;
    assert!(matches!(whole.last(), Some(Ok(Received::ListEnd(_)))));
    for (bounds, why) in [
        (
            ListBounds {
                bytes: 4000,
                ..reading().bounds
            },
            "max_list_body",
        ),
        (
            ListBounds {
                objects: 35,
                ..reading().bounds
            },
            "max_list_objects",
        ),
    ] {
        let r = ListReading {
            bounds,
            ..reading()
        };
        let (fetch, asked) = server(4096, pages.clone());
        let items = read(fetch, r).await;
        assert!(
            matches!(failure(&items), Some(Failure::BadBody(w)) if w.contains(why)),
            "{why}: {:?}",
            failure(&items)
        );
        assert!(
            asked.borrow().len() < 10,
            "{why}: ended before the last page"
        );
    }
}

#[actix_rt::test]
async fn a_body_that_stops_mid_item_is_cut_as_stalled_and_skipped_items_are_reported() {
    tokio::time::pause();
    let body = page(5, &["a", "b"], None);
    let half = body[..body.len() / 2].to_vec();
    let fetch: FetchPage = Box::new(move |_| {
        let piece = futures_util::stream::iter([Ok(Bytes::from(half.clone()))]);
        let body = piece.chain(futures_util::stream::pending()).boxed_local();
        std::future::ready(Ok(PageBody {
            encoding: Encoding::Json,
            length: None,
            body,
        }))
        .boxed_local()
    });
    let items = read(fetch, reading()).await;
    assert!(
        matches!(failure(&items), Some(Failure::Stalled)),
        "{items:?}"
    );

    let text = String::from_utf8(page(5, &["a", "b", "c"], None)).unwrap_or_default();
    let bad = text.replacen(
        r#"{"metadata":{"name":"b""#,
        r#"{"kind":"Node","metadata":{"name":"b""#,
        1,
    );
    let (fetch, _) = server(64, move |_| bad.clone().into_bytes());
    let items = read(fetch, reading()).await;
    assert!(
        items
            .iter()
            .any(|i| matches!(i, Ok(Received::Skipped(s)) if s.total == 1)),
        "{items:?}"
    );
    assert_eq!(parts(&items).iter().sum::<usize>(), 2);
    assert!(matches!(items.last(), Some(Ok(Received::ListEnd(_)))));
}
