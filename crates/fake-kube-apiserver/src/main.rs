//! `fake-kube-apiserver`: start one FAKE Kubernetes API server (not a real
//! cluster) on 127.0.0.1 and print its URL, for poking at it by hand, e.g.
//! `curl $URL/apis/batch/v1/namespaces/default/jobs`. Stops on Ctrl-C.

#[tokio::main]
async fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "fake".to_string());
    let cluster = fake_kube_apiserver::FakeCluster::start(&name).await;
    println!("{}", cluster.url());
    eprintln!(
        "fake-kube-apiserver {name:?}: a FAKE Kubernetes API server (not a real cluster) at {}; Ctrl-C to stop",
        cluster.url()
    );
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("fake-kube-apiserver: waiting for Ctrl-C failed: {e}");
    }
    cluster.shutdown();
}
