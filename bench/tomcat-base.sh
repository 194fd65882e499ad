# Sourced by bench/run.sh and bench/soak.sh.
# tomcat_base DIR PORT [setenv]: a CATALINA_BASE at DIR for Debian's tomcat10 listening on
# PORT, serving one static page at /index.html; with "setenv", jlive's drop-in
# (examples/appserver/tomcat/setenv.sh) in its bin/.
tomcat_base() {
    local base=$1 port=$2 f
    rm -rf "$base"
    mkdir -p "$base"/{conf,logs,temp,webapps/ROOT,work,bin}
    for f in catalina.properties context.xml jaspic-providers.xml logging.properties tomcat-users.xml web.xml; do
        cp /etc/tomcat10/$f "$base/conf/"
    done
    sed "s/port=\"8080\"/port=\"$port\"/" /etc/tomcat10/server.xml >"$base/conf/server.xml"
    echo '<html><body>hello from tomcat</body></html>' >"$base/webapps/ROOT/index.html"
    if [ "${3:-}" = setenv ]; then
        cp examples/appserver/tomcat/setenv.sh "$base/bin/"
    fi
}
